package firstboot

import (
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/policy"
)

// Choice is the rendered config a pool hands a new machine, and why.
type Choice struct {
	// Name is the rendered MachineConfig to serve; "" when the pool has none yet.
	Name string
	// Target says Name is the pool's target (spec.configuration); false, that the
	// rollout holds the target back and Name is the config the pool's nodes run.
	Target bool
	// Reason says why, in words for the server's log.
	Reason string
}

// Choose says which rendered config pool hands a machine at its first boot at now.
//
// MCO's server hands out spec.configuration once a node of the pool has updated to it
// (status.updatedMachineCount > 0), and status.configuration before that, so that a
// config that breaks nodes is not handed to new ones. mcotui goes further: a new machine
// gets the target only once the pool's rollout would hand it to an existing node: not
// while the pool is paused, outside its maintenance windows, while RolloutHeld is True
// (a health gate, an invalid policy), or before a node has taken it. Until then it gets
// the config the pool's nodes run, and the rollout updates it with the others.
func Choose(pool *mcfgv1.MachineConfigPool, now time.Time) Choice {
	target, current := pool.Spec.Configuration.Name, pool.Status.Configuration.Name
	switch {
	case target == "" && current == "":
		return Choice{Reason: fmt.Sprintf("pool %s has no rendered config yet", pool.Name)}
	case target == "":
		return Choice{Name: current, Reason: "the pool has no target; serving the config its nodes run"}
	case current == "" || current == target:
		return Choice{Name: target, Target: true, Reason: "the pool's nodes run its target or it has none yet"}
	}
	held := func(why string) Choice {
		return Choice{Name: current, Reason: fmt.Sprintf("the rollout to %s is held (%s); serving %s, which the pool's nodes run", target, why, current)}
	}
	if pool.Spec.Paused {
		return held("the pool is paused")
	}
	pol, err := policy.FromPool(pool)
	if err != nil {
		return held("its rollout policy is invalid: " + err.Error())
	}
	if st := pol.Windows.At(now); !st.Open {
		return held("outside the maintenance windows: " + st.Settled())
	}
	for _, c := range pool.Status.Conditions {
		if c.Type == policy.HeldCondition && c.Status == corev1.ConditionTrue {
			return held(string(policy.HeldCondition) + ": " + c.Message)
		}
	}
	if pool.Status.UpdatedMachineCount == 0 && pool.Status.MachineCount > 0 {
		return held("no node of the pool has updated to it yet")
	}
	return Choice{Name: target, Target: true, Reason: "the pool's rollout hands out its target"}
}
