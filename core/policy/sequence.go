package policy

import (
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Pool annotations that order rollouts across pools.
const (
	// WaitForPoolsKey names pools (comma-separated) that must be updated before this
	// pool's rollout targets a node: a canary pool first, then the rest.
	WaitForPoolsKey = "mcotui.io/wait-for-pools"
	// ExclusiveGroupKey names a group of pools that never update at once: while one
	// pool of the group has a node updating, the others target none.
	ExclusiveGroupKey = "mcotui.io/exclusive-group"
)

// Sequence is where a pool's rollout stands among the other pools'. The zero
// Sequence places no limit.
type Sequence struct {
	WaitFor   []string
	Exclusive string // the exclusive group, "" for none
}

// Any says whether the pool is ordered against others.
func (s Sequence) Any() bool { return len(s.WaitFor) > 0 || s.Exclusive != "" }

func parseSequence(pool *mcfgv1.MachineConfigPool, p *Policy, bad func(string, error)) {
	a := pool.Annotations
	if v, ok := a[WaitForPoolsKey]; ok {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				bad(WaitForPoolsKey, fmt.Errorf("%q has an empty pool name; list pools as canary,infra", v))
				continue
			case name == pool.Name:
				bad(WaitForPoolsKey, fmt.Errorf("the pool cannot wait for itself"))
				continue
			}
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				bad(WaitForPoolsKey, fmt.Errorf("%q is not a pool name: %s", name, strings.Join(errs, "; ")))
				continue
			}
			p.Gates.Sequence.WaitFor = append(p.Gates.Sequence.WaitFor, name)
		}
	}
	if v, ok := a[ExclusiveGroupKey]; ok {
		g := strings.TrimSpace(v)
		if errs := validation.IsDNS1123Label(g); len(errs) > 0 {
			bad(ExclusiveGroupKey, fmt.Errorf("%q is not a group name: %s", v, strings.Join(errs, "; ")))
		}
		p.Gates.Sequence.Exclusive = g
	}
}

// Check says why the pool may not target a node now, given every pool of the cluster
// (pool among them or not), or "" when its sequence lets it. A pool waits for each
// pool it names to be updated (rollout's PoolUpdated, as the pool's status reports
// it); within an exclusive group, a pool waits while another has a node updating
// (PoolBusy), and of the group's pools that want to start at once only the first by
// name starts, so that two never start together on stale statuses. busy says whether a
// pool has a node updating (PoolBusy, or what its nodes say when the caller has them).
//
// A pool named by WaitForPoolsKey that does not exist holds the rollout: a typo must
// not release a canary's followers.
func (s Sequence) Check(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool, updated, busy func(*mcfgv1.MachineConfigPool) bool) string {
	if updated(pool) {
		return "" // nothing to start: a pool done says so, not that it waits
	}
	byName := make(map[string]*mcfgv1.MachineConfigPool, len(pools))
	for _, p := range pools {
		byName[p.Name] = p
	}
	for _, name := range s.WaitFor {
		other, ok := byName[name]
		switch {
		case !ok:
			return fmt.Sprintf("waiting for pool %s (%s), which does not exist", name, WaitForPoolsKey)
		case waitsFor(other, pool.Name):
			return fmt.Sprintf("pools %s and %s wait for each other (%s): neither can start; remove one of them", pool.Name, name, WaitForPoolsKey)
		case !updated(other):
			return fmt.Sprintf("waiting for pool %s to be updated (%d of %d machines updated to %s)", name,
				other.Status.UpdatedMachineCount, other.Status.MachineCount, orNone(other.Spec.Configuration.Name))
		}
	}
	if s.Exclusive == "" || busy(pool) {
		// A pool with a node updating finishes it, and goes on: it holds the group.
		return ""
	}
	var first string
	for _, other := range pools {
		if other.Name == pool.Name || strings.TrimSpace(other.Annotations[ExclusiveGroupKey]) != s.Exclusive {
			continue
		}
		if busy(other) {
			return fmt.Sprintf("pool %s of exclusive group %s is updating", other.Name, s.Exclusive)
		}
		if !other.Spec.Paused && !updated(other) && other.Name < pool.Name && (first == "" || other.Name < first) {
			first = other.Name
		}
	}
	if first != "" {
		return fmt.Sprintf("pool %s of exclusive group %s goes first (by name)", first, s.Exclusive)
	}
	return ""
}

// PoolBusy says, from its status, whether the pool has a node updating: one
// unavailable (cordoned, draining, rebooting, or failing), or, while it is not paused,
// some machines updated to its target and some not.
func PoolBusy(p *mcfgv1.MachineConfigPool) bool {
	st := p.Status
	if st.UnavailableMachineCount > 0 {
		return true
	}
	return !p.Spec.Paused && st.UpdatedMachineCount > 0 && st.UpdatedMachineCount < st.MachineCount
}

func waitsFor(p *mcfgv1.MachineConfigPool, name string) bool {
	return slices.ContainsFunc(strings.Split(p.Annotations[WaitForPoolsKey], ","), func(s string) bool { return strings.TrimSpace(s) == name })
}

func orNone(s string) string {
	if s == "" {
		return "(none rendered yet)"
	}
	return s
}
