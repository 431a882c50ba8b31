package controller

import (
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// sequencedOn are the pools whose order across pools (policy.Sequence) reads pool cur
// and may change with this update of it: those that wait for it
// (policy.WaitForPoolsKey) or share its exclusive group, when it became or stopped
// being updated or busy. Their RolloutHeld says they wait for it; without this they
// would start only at their next poll.
func (w rolloutInformers) sequencedOn(old, cur *mcfgv1.MachineConfigPool) []string {
	if old != nil && cur != nil && rollout.PoolUpdated(old) == rollout.PoolUpdated(cur) && policy.PoolBusy(old) == policy.PoolBusy(cur) {
		return nil
	}
	p := cur
	if p == nil {
		p = old
	}
	group := strings.TrimSpace(p.Annotations[policy.ExclusiveGroupKey])
	ps, _ := w.pools.Lister().List(labels.Everything())
	var out []string
	for _, o := range ps {
		if o.Name == p.Name {
			continue
		}
		waits := slices.ContainsFunc(strings.Split(o.Annotations[policy.WaitForPoolsKey], ","), func(s string) bool { return strings.TrimSpace(s) == p.Name })
		if waits || (group != "" && strings.TrimSpace(o.Annotations[policy.ExclusiveGroupKey]) == group) {
			out = append(out, o.Name)
		}
	}
	return out
}
