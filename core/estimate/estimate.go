// Package estimate predicts how long a pool's rollout has left from the phase times
// measured on the pool's own nodes: each node's drain, apply, reboot and ready times
// (Sample), kept on the pool (Record, in the PhaseTimesKey annotation) so that the
// estimate survives the controller's restart and reads the same in the CLI, the TUI
// and the controller. The controller measures; everyone else reads.
//
// The estimate plays the rest of the rollout forward: the nodes updating now finish
// what is left of their phases, and each waiting node, in rollout order, takes the
// first slot (of maxUnavailable) that frees, for the mean time of a whole update.
// Without measured phase times it goes by the pace, the nodes finished lately. Compute
// is the one rule for the time remaining: status, rollout --wait, the controller's
// notifications and every screen of the TUI (the pools' note and EST column, a node's
// EST, the grid's pace line) print its answer, so that no two of them disagree.
package estimate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
)

// PhaseTimesKey is the pool annotation that holds its Record. An annotation rather than
// the controller's memory: a new leader (a restart, a failover) reads what the last one
// measured, and `mcotui status`, `rollout --wait` and the TUI estimate from the same
// numbers without asking the controller. Not the pool's status: its type is MCO's.
const PhaseTimesKey = "mcotui.io/phase-times"

// MaxSamples is how many of the pool's latest node updates a Record keeps: enough for a
// stable mean, few enough that a change in the pool (a slower config, bigger nodes)
// shows within a rollout.
const MaxSamples = 20

// Phase is where a node is in its update, as far as the estimate cares.
type Phase int

const (
	// Waiting: not started (its desired config is not the target yet, or its agent
	// has not begun).
	Waiting Phase = iota
	// Draining: from the update's start to Drained (prepare, cordon, drain).
	Draining
	// Applying: from Drained to the files and OS written (and the post-config
	// actions of an update without a reboot).
	Applying
	// Rebooting: from applied to the node booted again.
	Rebooting
	// Readying: from the reboot to the node Done and Ready.
	Readying
	// Finished: Done at the target.
	Finished
	// Failed: degraded; the estimate leaves it out.
	Failed
)

var phaseNames = [...]string{"waiting", "draining", "applying", "rebooting", "readying", "done", "failed"}

func (p Phase) String() string { return phaseNames[p] }

// Sample is one node's update, measured.
type Sample struct {
	Drain, Apply, Reboot, Ready time.Duration
}

// Total is the whole update.
func (s Sample) Total() time.Duration { return s.Drain + s.Apply + s.Reboot + s.Ready }

// of is the time of one phase.
func (s Sample) of(p Phase) time.Duration {
	switch p {
	case Draining:
		return s.Drain
	case Applying:
		return s.Apply
	case Rebooting:
		return s.Reboot
	case Readying:
		return s.Ready
	}
	return 0
}

// Record is a pool's measured updates, newest last, at most MaxSamples.
type Record struct {
	Samples []Sample
}

// recordJSON is the annotation's form: seconds, one array of four per node, so that
// twenty nodes take a few hundred bytes.
type recordJSON struct {
	Samples [][4]int64 `json:"samples"`
}

// Parse reads the pool's Record from its annotation; a pool without one has an empty
// Record. A value that does not parse is an error naming the pool (the controller
// writes it anew with its next sample).
func Parse(pool *mcfgv1.MachineConfigPool) (Record, error) {
	v, ok := pool.Annotations[PhaseTimesKey]
	if !ok || v == "" {
		return Record{}, nil
	}
	var j recordJSON
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return Record{}, fmt.Errorf("machineconfigpool %s: annotation %s: %w", pool.Name, PhaseTimesKey, err)
	}
	r := Record{Samples: make([]Sample, 0, len(j.Samples))}
	for _, s := range j.Samples {
		r.Samples = append(r.Samples, Sample{
			Drain: time.Duration(max(s[0], 0)) * time.Second, Apply: time.Duration(max(s[1], 0)) * time.Second,
			Reboot: time.Duration(max(s[2], 0)) * time.Second, Ready: time.Duration(max(s[3], 0)) * time.Second,
		})
	}
	return r, nil
}

// Format is the annotation's value for r.
func (r Record) Format() string {
	j := recordJSON{Samples: make([][4]int64, len(r.Samples))}
	for i, s := range r.Samples {
		j.Samples[i] = [4]int64{secs(s.Drain), secs(s.Apply), secs(s.Reboot), secs(s.Ready)}
	}
	b, _ := json.Marshal(j) // integers only: cannot fail
	return string(b)
}

func secs(d time.Duration) int64 { return int64((d + time.Second/2) / time.Second) }

// Add is r with s, the oldest sample dropped beyond MaxSamples.
func (r Record) Add(s Sample) Record {
	out := append(slices.Clone(r.Samples), s)
	if len(out) > MaxSamples {
		out = out[len(out)-MaxSamples:]
	}
	return Record{Samples: out}
}

// Mean is the mean sample; ok is false without samples.
func (r Record) Mean() (Sample, bool) {
	n := time.Duration(len(r.Samples))
	if n == 0 {
		return Sample{}, false
	}
	var sum Sample
	for _, s := range r.Samples {
		sum.Drain += s.Drain
		sum.Apply += s.Apply
		sum.Reboot += s.Reboot
		sum.Ready += s.Ready
	}
	return Sample{Drain: sum.Drain / n, Apply: sum.Apply / n, Reboot: sum.Reboot / n, Ready: sum.Ready / n}, true
}

// rebooted is r's updates that rebooted their node. A rebootless update (a file
// that only restarts a unit) takes seconds where a reboot takes minutes: a rollout
// whose nodes reboot is timed by those alone.
func (r Record) rebooted() Record {
	var out Record
	for _, s := range r.Samples {
		if s.Reboot > 0 {
			out.Samples = append(out.Samples, s)
		}
	}
	return out
}

// rebootedBasis is Basis for a Record of rebooted updates only.
func (r Record) rebootedBasis() string {
	switch n := len(r.Samples); n {
	case 0:
		return "no update of this pool that rebooted measured yet"
	case 1:
		return "from 1 node updated with a reboot"
	default:
		return fmt.Sprintf("from %d nodes updated with a reboot", n)
	}
}

// Basis says what an estimate from r stands on, "from 12 nodes updated".
func (r Record) Basis() string {
	switch n := len(r.Samples); n {
	case 0:
		return "no node of this pool measured yet"
	case 1:
		return "from 1 node updated"
	default:
		return fmt.Sprintf("from %d nodes updated", n)
	}
}

// Node is one member's place in the rollout: its phase and since when.
type Node struct {
	Name  string
	Phase Phase
	// Since is when the node entered Phase (its condition's transition time); for a
	// Finished node, when its update finished (Updated), zero when unknown.
	Since time.Time
	// Retrying says the node's agent has scheduled another try of what failed
	// (nodeanno.RetryKey): a Failed node's update, or a drain a budget refused. Only
	// for a node Failed or updating.
	Retrying bool
	// Reboots says the node's update reboots it: its agent said so (RebootedNode
	// Unknown, "Upgrade requires a reboot.", or True). Only for a node updating.
	Reboots bool
}

// Milestones are the times a node's update passed each phase, as its
// MachineConfigNode's conditions give them while it updates; zero where not (yet).
type Milestones struct {
	Start, Drained, Applied, Rebooted time.Time
}

// NodeOf is the node's phase in the rollout to target, from its annotations and its
// MachineConfigNode's conditions (mcn may be nil), and the milestones its conditions
// hold so far.
func NodeOf(n *corev1.Node, mcn *mcfgv1.MachineConfigNode, target string) (Node, Milestones) {
	out := Node{Name: n.Name}
	var m Milestones
	switch {
	case rollout.DoneAt(n, target):
		out.Phase = Finished
		if mcn != nil {
			out.Since = trueAt(mcn.Status.Conditions, phase.Updated)
		}
		return out, m
	case rollout.Degraded(n):
		out.Phase = Failed
		_, out.Retrying = nodeanno.RetryOf(n)
		return out, m
	case nodeanno.Desired(n) != target:
		return out, m
	}
	_, out.Retrying = nodeanno.RetryOf(n)
	if mcn != nil {
		conds := mcn.Status.Conditions
		m.Start = started(conds)
		m.Drained = trueAt(conds, phase.Drained)
		m.Applied = trueAt(conds, phase.AppliedFilesAndOS)
		if m.Applied.IsZero() {
			// Nothing to write but the post-config actions (a live update).
			m.Applied = trueAt(conds, phase.UpdatePostActionComplete)
		}
		m.Rebooted = trueAt(conds, phase.RebootedNode)
		c, ok := phase.Find(conds, phase.RebootedNode)
		out.Reboots = ok && c.Status != metav1.ConditionFalse
	}
	var updated time.Time
	if mcn != nil {
		updated = trueAt(mcn.Status.Conditions, phase.Updated)
	}
	switch {
	case !updated.IsZero():
		// The agent wrote Updated (which resets the other conditions) and has yet to
		// say Done in the node's annotations.
		out.Phase, out.Since = Readying, updated
	case !m.Rebooted.IsZero():
		out.Phase, out.Since = Readying, m.Rebooted
	case !m.Applied.IsZero():
		out.Phase, out.Since = Rebooting, m.Applied
	case !m.Drained.IsZero():
		out.Phase, out.Since = Applying, m.Drained
	case !m.Start.IsZero():
		out.Phase, out.Since = Draining, m.Start
	default:
		// Targeted, its agent not begun: counted as draining from now.
		out.Phase = Draining
	}
	return out, m
}

// started is when the update began: UpdatePrepared left False.
func started(conds []metav1.Condition) time.Time {
	c, ok := phase.Find(conds, phase.UpdatePrepared)
	if !ok || c.Status == metav1.ConditionFalse {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

func trueAt(conds []metav1.Condition, t mcfgv1.StateProgress) time.Time {
	c, ok := phase.Find(conds, t)
	if !ok || c.Status != metav1.ConditionTrue {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// SampleOf is the update measured from its milestones, ended (Done) at done. A phase
// the update skipped (no drain, no reboot) counts zero; a milestone out of order (a
// clock step) counts zero rather than negative. ok is false without a start.
func SampleOf(m Milestones, done time.Time) (Sample, bool) {
	if m.Start.IsZero() || done.Before(m.Start) {
		return Sample{}, false
	}
	prev := m.Start
	step := func(t time.Time) time.Duration {
		if t.IsZero() || t.Before(prev) {
			return 0
		}
		d := t.Sub(prev)
		prev = t
		return d
	}
	var s Sample
	s.Drain = step(m.Drained)
	s.Apply = step(m.Applied)
	s.Reboot = step(m.Rebooted)
	s.Ready = step(done)
	return s, true
}

// PaceWindow is how far back the pace looks: long enough to hold a few nodes of a
// rollout that takes minutes a node, short enough to show a rollout slowing down.
const PaceWindow = 15 * time.Minute

// Pace is how fast the rollout went lately, as k9s's pulse shows a resource's rate:
// the nodes that finished their update within Window before now.
type Pace struct {
	Done   int
	Window time.Duration
	// Span is the time Done is counted over: Window, or less when the rollout began
	// within it, so that a rollout minutes old is not taken for a slow one.
	Span time.Duration
}

// PerHour is the pace in nodes an hour.
func (p Pace) PerHour() float64 {
	if p.Span <= 0 {
		return 0
	}
	return float64(p.Done) * float64(time.Hour) / float64(p.Span)
}

// paceOf counts the Finished nodes whose update ended within PaceWindow before now.
func paceOf(nodes []Node, now time.Time) Pace {
	p := Pace{Window: PaceWindow, Span: PaceWindow}
	var first, last time.Time
	for _, n := range nodes {
		if n.Phase != Finished || n.Since.IsZero() || n.Since.After(now) || n.Since.Before(now.Add(-PaceWindow)) {
			continue
		}
		if p.Done == 0 || n.Since.Before(first) {
			first = n.Since
		}
		if p.Done == 0 || n.Since.After(last) {
			last = n.Since
		}
		p.Done++
	}
	if p.Done >= 2 {
		// Counted from a gap before the first: the rollout began about one mean gap
		// before its first node finished, and a stall since the last lengthens the
		// span, slowing the pace as it should.
		gap := last.Sub(first) / time.Duration(p.Done-1)
		p.Span = min(PaceWindow, now.Sub(first)+gap)
	}
	return p
}

// Estimate is the rest of a rollout, predicted.
type Estimate struct {
	// OK is false when there is nothing to go by: no estimate, only Basis.
	OK bool
	// Remaining is until the last node is Done.
	Remaining time.Duration
	// PerNode is, for each node still to finish, until it is Done (only from measured
	// phase times: the pace says nothing of one node).
	PerNode map[string]time.Duration
	// Basis is what the estimate stands on ("from 12 nodes updated", "at the pace of
	// 3 done in 15m").
	Basis string

	// Updating, Waiting and Failed count the nodes not Finished; Failed ones are left
	// out of Remaining (their update stopped).
	Updating, Waiting, Failed int
	// Retrying counts, of Updating and Failed, the nodes whose agent has scheduled
	// another try (Node.Retrying); RetryingUpdating those of Updating. A retrying node
	// has no time of its own (PerNode): when the try succeeds is not known.
	Retrying, RetryingUpdating int
	// Pace is the nodes finished lately.
	Pace Pace
}

// Left is the nodes not yet Done, failed ones included.
func (e Estimate) Left() int { return e.Updating + e.Waiting + e.Failed }

// Going is the nodes the estimate expects to finish: updating or waiting, and not
// retrying what failed.
func (e Estimate) Going() int { return e.Updating + e.Waiting - e.RetryingUpdating }

// Timed reports whether there is a time to give: an estimate (OK) and nodes going. A
// pool whose only nodes left failed or are retrying has none, rather than "~0s": a
// failed node does not finish in no time.
func (e Estimate) Timed() bool { return e.OK && e.Going() > 0 }

// Progress is what is left of the rollout in a few words, the one wording of the
// TUI's pace line (and every place that says it short): the nodes going with the
// time they take when Timed, then those retrying, then those failed and not retried:
// "4 left ~7m", "3 left ~7m, 1 failed", "2 left, 1 retrying" (no time known),
// "1 retrying", "1 failed".
func (e Estimate) Progress() string {
	var parts []string
	if n := e.Going(); n > 0 {
		s := fmt.Sprintf("%d left", n)
		if e.OK {
			s += " ~" + Round(e.Remaining)
		}
		parts = append(parts, s)
	}
	if e.Retrying > 0 {
		parts = append(parts, fmt.Sprintf("%d retrying", e.Retrying))
	}
	if n := e.Failed - (e.Retrying - e.RetryingUpdating); n > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", n))
	}
	if len(parts) == 0 {
		return "none left"
	}
	return strings.Join(parts, ", ")
}

// Rolling reports whether the rollout is under way: nodes left, and some updating or
// finished lately.
func (e Estimate) Rolling() bool { return e.Left() > 0 && (e.Updating > 0 || e.Pace.Done > 0) }

// String is the estimate as status and rollout --wait print it: "~12m (from 12 nodes
// updated)", or why there is none.
func (e Estimate) String() string {
	switch {
	case !e.OK:
		return "unknown (" + e.Basis + ")"
	case !e.Timed():
		// Only failed or retrying nodes are left: when they finish is not known.
		return "unknown: " + e.Progress() + " (" + e.Basis + ")"
	}
	return "~" + Round(e.Remaining) + " (" + e.Basis + ")"
}

// Round is a duration as a person reads an estimate: seconds under a minute, minutes
// under an hour, then hours and minutes.
func Round(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

// Compute estimates the rest of the rollout at now: nodes in rollout order (the
// plan's), slots the pool's maxUnavailable. It is the one rule for the time remaining:
//   - with phase times measured on the pool (r), the rest is played forward: a node
//     past its phase's mean counts the phase as ending now; when a node of this rollout
//     reboots (Node.Reboots), only the measured updates that rebooted count;
//   - without, at the pace of the nodes finished lately, when two or more did (one is
//     no pace: when the rollout began is unknown);
//   - else unknown, and Basis says why.
//
// The phase times win over the pace: a burst of nodes finishing together (or a stall)
// makes the pace say seconds (or nothing) where the measured updates say minutes.
func Compute(r Record, nodes []Node, slots int, now time.Time) Estimate {
	e := Estimate{Basis: r.Basis(), PerNode: map[string]time.Duration{}, Pace: paceOf(nodes, now)}
	if slices.ContainsFunc(nodes, func(n Node) bool { return n.Reboots }) {
		// This rollout reboots its nodes: rebootless updates measured before would
		// say seconds for what takes minutes.
		if rr := r.rebooted(); len(rr.Samples) < len(r.Samples) {
			r, e.Basis = rr, rr.rebootedBasis()
		}
	}
	for _, n := range nodes {
		switch n.Phase {
		case Finished:
		case Failed:
			e.Failed++
			if n.Retrying {
				e.Retrying++
			}
		case Waiting:
			e.Waiting++
		default:
			e.Updating++
			if n.Retrying {
				e.Retrying++
				e.RetryingUpdating++
			}
		}
	}
	mean, ok := r.Mean()
	if !ok {
		if p := e.Pace; p.Done >= 2 {
			e.OK = true
			e.Remaining = time.Duration(float64(e.Going()) / float64(p.Done) * float64(p.Span))
			e.Basis = fmt.Sprintf("at the pace of %d done in %s", p.Done, Round(p.Span))
		}
		return e
	}
	e.OK = true
	slots = max(slots, 1)
	// free holds when each slot frees: the nodes updating now hold theirs until they
	// finish; the rest are free now.
	var free []time.Duration
	var waiting []string
	for _, n := range nodes {
		switch n.Phase {
		case Finished, Failed:
			continue
		case Waiting:
			waiting = append(waiting, n.Name)
			continue
		}
		left := remaining(mean, n, now)
		if !n.Retrying {
			// A retrying node holds its slot for about its phases' rest, a guess
			// good enough for the others' turns but not said as its own time.
			e.PerNode[n.Name] = left
		}
		free = append(free, left)
	}
	for len(free) < slots {
		free = append(free, 0)
	}
	slices.Sort(free)
	total := mean.Total()
	for _, name := range waiting {
		// The earliest slot to free takes the next node.
		end := free[0] + total
		e.PerNode[name] = end
		free[0] = end
		for i := 0; i+1 < len(free) && free[i] > free[i+1]; i++ {
			free[i], free[i+1] = free[i+1], free[i]
		}
	}
	for _, d := range e.PerNode {
		e.Remaining = max(e.Remaining, d)
	}
	return e
}

// remaining is what is left of an updating node's update: the rest of its phase, at
// least nothing, and the phases after it.
func remaining(mean Sample, n Node, now time.Time) time.Duration {
	var left time.Duration
	if n.Since.IsZero() {
		left = mean.of(n.Phase)
	} else {
		left = max(mean.of(n.Phase)-now.Sub(n.Since), 0)
	}
	for p := n.Phase + 1; p < Finished; p++ {
		left += mean.of(p)
	}
	return left
}

// Describe is a node's estimate for its detail: "EST 4m (rebooting)".
func Describe(e Estimate, n Node) string {
	d, ok := e.PerNode[n.Name]
	if !e.OK || !ok {
		return ""
	}
	return "EST " + Round(d) + " (" + strings.ToLower(n.Phase.String()) + ")"
}

// ForPool estimates the rest of the pool's rollout at now from its Record (a bad
// annotation counts as none: an estimate is advice), its members and their
// MachineConfigNodes (mcn returns nil for a node without one), nodes in MCO's order
// (rollout.Order). The Node of each member comes back too, for per-node detail.
func ForPool(pool *mcfgv1.MachineConfigPool, members []*corev1.Node, mcn func(string) *mcfgv1.MachineConfigNode, now time.Time) (Estimate, map[string]Node) {
	target := pool.Spec.Configuration.Name
	ordered := rollout.Order(members)
	nodes := make([]Node, 0, len(ordered))
	byName := make(map[string]Node, len(ordered))
	for _, n := range ordered {
		var m *mcfgv1.MachineConfigNode
		if mcn != nil {
			m = mcn(n.Name)
		}
		en, _ := NodeOf(n, m, target)
		nodes = append(nodes, en)
		byName[n.Name] = en
	}
	e, _ := OfPool(pool, nodes, now)
	return e, byName
}

// OfPool is Compute with the pool's Record and maxUnavailable (1 when it does not
// parse: the rollout refuses such a pool anyway), nodes its members' places in rollout
// order. The error is the Record's, which counts as none.
func OfPool(pool *mcfgv1.MachineConfigPool, nodes []Node, now time.Time) (Estimate, error) {
	r, err := Parse(pool)
	slots, muErr := rollout.MaxUnavailable(pool, len(nodes))
	if muErr != nil {
		slots = 1
	}
	return Compute(r, nodes, slots, now), err
}
