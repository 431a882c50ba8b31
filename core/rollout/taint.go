package rollout

import (
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// The taint MCO's node controller keeps on every node of a pool whose desired config
// differs from the pool's target (pkg/constants NodeUpdateInProgressTaint): the
// scheduler then prefers other nodes for new pods, which would soon be drained again.
const (
	UpdateInProgressTaintKey    = "UpdateInProgress"
	UpdateInProgressTaintEffect = corev1.TaintEffectPreferNoSchedule
)

// HasUpdateInProgressTaint reports whether the node carries the UpdateInProgress
// taint.
func HasUpdateInProgressTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, isUpdateInProgress)
}

func isUpdateInProgress(t corev1.Taint) bool {
	return t.Key == UpdateInProgressTaintKey && t.Effect == UpdateInProgressTaintEffect
}

// UpdateTaints returns the taints node should carry as a member of pool: its own, with
// the UpdateInProgress taint added when its desired config differs from the pool's
// target (spec.configuration.name) and removed when it matches; and whether that
// differs from what the node has. A node mcotui never configured has no desired config
// and so is tainted, as MCO would taint it.
//
// A paused pool, or one not rendered yet, changes nothing: MCO's node controller only
// writes a paused pool's status, so its nodes keep the taints they have.
func UpdateTaints(pool *mcfgv1.MachineConfigPool, n *corev1.Node) ([]corev1.Taint, bool) {
	target := pool.Spec.Configuration.Name
	if pool.Spec.Paused || target == "" {
		return n.Spec.Taints, false
	}
	return updateTaints(n, nodeanno.Desired(n) != target, HasUpdateInProgressTaint(n))
}

// updateTaints is n's taints with the UpdateInProgress taint when want, without it
// otherwise, and whether that differs from has, whether n has it now.
func updateTaints(n *corev1.Node, want, has bool) ([]corev1.Taint, bool) {
	switch {
	case want && !has:
		return append(slices.Clone(n.Spec.Taints), corev1.Taint{Key: UpdateInProgressTaintKey, Effect: UpdateInProgressTaintEffect}), true
	case !want && has:
		return slices.DeleteFunc(slices.Clone(n.Spec.Taints), isUpdateInProgress), true
	}
	return n.Spec.Taints, false
}
