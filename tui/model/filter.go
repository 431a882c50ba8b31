package model

import (
	"fmt"
	"strings"

	"github.com/mcotui/mcotui/core/phase"
)

// Filter selects nodes by what the `/` prompt says: space-separated terms that must all
// hold. A term is
//
//	pool:NAME     the node is in pool NAME
//	phase:NAME    the node's current phase is NAME (case-insensitive prefix: phase:drain);
//	              phase:none is a node whose update has not started
//	degraded      the node is degraded (NodeDegraded True, or the agent says Degraded or
//	              Unreconcilable), as MCO counts it
//	updating      the node is updating
//	waiting       the node is updating and a phase waits (a drain held by a budget)
//	behind        the node runs its desired config, which is not yet its pool's target
//	notready      the node's kubelet is not Ready
//	done          the node runs its desired config, its pool's target
//	TEXT          the node's name contains TEXT
//
// and any term may start with ! to negate it.
type Filter struct {
	raw   string
	terms []term
}

type termKind uint8

const (
	termName termKind = iota
	termPool
	termPhase
	termDegraded
	termUpdating
	termDone
	termWaiting
	termBehind
	termNotReady
)

type term struct {
	kind   termKind
	neg    bool
	val    string
	phases uint16 // termPhase: bit i+1 for phase.Columns[i], bit 0 for "none"
}

// ParseFilter parses the text of the `/` prompt. The empty string is the filter that
// selects every node.
func ParseFilter(s string) (Filter, error) {
	f := Filter{raw: strings.TrimSpace(s)}
	for _, w := range strings.Fields(f.raw) {
		t := term{}
		if rest, ok := strings.CutPrefix(w, "!"); ok {
			t.neg, w = true, rest
		}
		key, val, hasKey := strings.Cut(w, ":")
		switch {
		case hasKey && key == "pool":
			t.kind, t.val = termPool, val
		case hasKey && key == "phase":
			t.kind = termPhase
			t.phases = phaseMask(val)
			if t.phases == 0 {
				return Filter{}, fmt.Errorf("no phase %q: phases are none, %s", val, phaseList())
			}
		case hasKey:
			return Filter{}, fmt.Errorf("unknown filter %q: use pool:NAME, phase:NAME, degraded, updating, waiting, behind, notready, done or a name", key+":")
		case w == "degraded":
			t.kind = termDegraded
		case w == "updating":
			t.kind = termUpdating
		case w == "done":
			t.kind = termDone
		case w == "waiting":
			t.kind = termWaiting
		case w == "behind":
			t.kind = termBehind
		case w == "notready":
			t.kind = termNotReady
		case w == "":
			continue // a bare "!"
		default:
			t.kind, t.val = termName, strings.ToLower(w)
		}
		f.terms = append(f.terms, t)
	}
	return f, nil
}

func phaseMask(val string) uint16 {
	val = strings.ToLower(val)
	if val == "" {
		return 0
	}
	var m uint16
	if strings.HasPrefix("none", val) {
		m |= 1
	}
	for i, c := range phase.Columns {
		if strings.HasPrefix(strings.ToLower(string(c)), val) {
			m |= 1 << (i + 1)
		}
	}
	return m
}

func phaseList() string {
	names := make([]string, len(phase.Columns))
	for i, c := range phase.Columns {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// String is the filter as typed, trimmed.
func (f Filter) String() string { return f.raw }

// IsZero reports whether the filter selects every node.
func (f Filter) IsZero() bool { return len(f.terms) == 0 }

// Match reports whether the node passes every term.
func (f Filter) Match(n *Node) bool {
	for i := range f.terms {
		if f.terms[i].match(n) == f.terms[i].neg {
			return false
		}
	}
	return true
}

func (t *term) match(n *Node) bool {
	switch t.kind {
	case termPool:
		return n.Pool == t.val
	case termPhase:
		return t.phases&(1<<(n.Phase+1)) != 0
	case termDegraded:
		return n.Degraded
	case termUpdating:
		return n.Updating
	case termDone:
		return n.Done()
	case termWaiting:
		return n.Waiting
	case termBehind:
		return n.Behind
	case termNotReady:
		return n.Ready != "" && n.Ready != "Ready"
	}
	return strings.Contains(n.Name, t.val)
}
