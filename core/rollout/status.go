package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonInvalidMaxUnavailable is the reason of Degraded and Updating for a pool whose
// spec.maxUnavailable is neither an integer nor a percentage, or negative.
const ReasonInvalidMaxUnavailable = "InvalidMaxUnavailable"

// Status computes the pool's status from its member nodes the way MCO's node controller
// does (pkg/controller/node/status.go calculateStatus), so that `kubectl get mcp` shows
// the same UPDATED, UPDATING, DEGRADED and count columns as on OpenShift:
//
//   - machineCount: the nodes; updatedMachineCount: nodes Done at the pool's target
//     (see DoneAt); readyMachineCount: updated nodes that are also Ready (a cordoned
//     node is updated but not ready); unavailableMachineCount: nodes that are
//     Unavailable; degradedMachineCount: nodes that are Degraded.
//   - Updated is True, with "All nodes are updated with MachineConfig X", when every
//     node is updated and ready and none is unavailable; status.configuration then
//     moves to spec.configuration, and only then.
//   - Otherwise Updated is False and Updating True, "All nodes are updating to
//     MachineConfig X", or False with "Pool is paused; will not update to
//     MachineConfig X" when the pool is paused.
//   - NodeDegraded is True when a node is degraded, with reason "%d nodes are reporting
//     degraded status on sync" and message `Node <n> is reporting: "<reason>"` for each
//     degraded node that gives a reason, joined by ", ".
//   - Degraded is True when NodeDegraded or RenderDegraded (see SetRenderDegraded) is,
//     with NodeDegraded's message; and when spec.maxUnavailable is invalid (reason
//     ReasonInvalidMaxUnavailable, MaxUnavailable's error), in which case Updating is
//     False: no node is given the target until it is fixed.
//
// A condition whose status does not change keeps its lastTransitionTime; one that is
// unchanged altogether is left as it is. Everything else in the pool's status (cert
// expiries, pool synchronizers, other conditions) is carried over. nodes is read only;
// the result shares no memory with pool.
func Status(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, now metav1.Time) mcfgv1.MachineConfigPoolStatus {
	return status(nil, pool, nodes, now)
}

// status is Status, reading nodes through c.
func status(c *Memo, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, now metav1.Time) mcfgv1.MachineConfigPoolStatus {
	target := pool.Spec.Configuration.Name
	var machines, updated, ready, unavail int32
	var degraded []*member
	var stage stageCounts
	c.lock()
	for _, n := range nodes {
		if n == nil {
			continue
		}
		machines++
		m := &c.entry(n).m
		if m.done() && m.desired == target {
			updated++
			if m.ready() {
				ready++
			}
		}
		if m.unavailable() {
			unavail++
		}
		if m.degraded() {
			degraded = append(degraded, m)
		}
		stage.add(m)
	}
	c.unlock()
	slices.SortFunc(degraded, func(a, b *member) int { return cmp.Compare(a.name, b.name) })

	status := *pool.Status.DeepCopy()
	status.ObservedGeneration = pool.Generation
	status.MachineCount = machines
	status.UpdatedMachineCount = updated
	status.ReadyMachineCount = ready
	status.UnavailableMachineCount = unavail
	status.DegradedMachineCount = int32(len(degraded))

	line := "MachineConfig " + target
	_, invalid := MaxUnavailable(pool, int(machines))
	if updated == machines && ready == machines && unavail == 0 {
		setCondition(&status, mcfgv1.MachineConfigPoolUpdated, corev1.ConditionTrue, "", "All nodes are updated with "+line, now)
		setCondition(&status, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "", now)
		status.Configuration = *pool.Spec.Configuration.DeepCopy()
	} else {
		setCondition(&status, mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "", "", now)
		if pool.Spec.Paused {
			setCondition(&status, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", pausedMessage(target), now)
		} else if invalid != nil {
			setCondition(&status, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, ReasonInvalidMaxUnavailable,
				"No node is updating to "+line+": "+invalid.Error(), now)
		} else {
			setCondition(&status, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionTrue, "", "All nodes are updating to "+line, now)
		}
	}

	nodeDegradedMessage := ""
	if len(degraded) > 0 {
		var reasons []string
		for _, m := range degraded {
			if m.reason != "" {
				reasons = append(reasons, fmt.Sprintf("Node %s is reporting: %q", m.name, m.reason))
			}
		}
		nodeDegradedMessage = strings.Join(reasons, ", ")
		setCondition(&status, mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionTrue,
			fmt.Sprintf("%d nodes are reporting degraded status on sync", len(degraded)), nodeDegradedMessage, now)
	} else {
		setCondition(&status, mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionFalse, "", "", now)
	}

	renderDegraded := isTrue(pool.Status.Conditions, mcfgv1.MachineConfigPoolRenderDegraded)
	switch {
	case invalid != nil:
		// No node can be given the target: the pool cannot make progress until its
		// spec is fixed, which is what Degraded says.
		msg := invalid.Error()
		if nodeDegradedMessage != "" {
			msg += "; " + nodeDegradedMessage
		}
		setCondition(&status, mcfgv1.MachineConfigPoolDegraded, corev1.ConditionTrue, ReasonInvalidMaxUnavailable, msg, now)
	case len(degraded) > 0 || renderDegraded:
		setCondition(&status, mcfgv1.MachineConfigPoolDegraded, corev1.ConditionTrue, "", nodeDegradedMessage, now)
	default:
		setCondition(&status, mcfgv1.MachineConfigPoolDegraded, corev1.ConditionFalse, "", "", now)
	}
	stage.setCondition(&status, now)
	return status
}

// SetRenderDegraded records in status whether rendering the pool failed, as MCO's
// render controller does (pkg/controller/render/render_controller.go): RenderDegraded
// True with "Failed to render configuration for pool <pool>: <err>", or False once a
// render succeeds. Status then folds it into Degraded.
func SetRenderDegraded(status *mcfgv1.MachineConfigPoolStatus, pool string, renderErr error, now metav1.Time) {
	if renderErr != nil {
		setCondition(status, mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionTrue, "",
			fmt.Sprintf("Failed to render configuration for pool %s: %v", pool, renderErr), now)
		return
	}
	setCondition(status, mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionFalse, "", "", now)
}

// PoolUpdated says the pool has finished rolling out its target: it reports Updated,
// for the generation of its spec, with its target as its configuration.
func PoolUpdated(p *mcfgv1.MachineConfigPool) bool {
	c := FindCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated)
	return c != nil && c.Status == corev1.ConditionTrue && p.Status.Configuration.Name == p.Spec.Configuration.Name &&
		p.Status.ObservedGeneration == p.Generation
}

// FindCondition returns the pool condition of type t, or nil.
func FindCondition(status *mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

func pausedMessage(target string) string {
	return "Pool is paused; will not update to MachineConfig " + target
}

// setCondition writes a condition following MCO's SetMachineConfigPoolCondition: an
// unchanged condition is left alone, and one whose status is unchanged keeps its
// lastTransitionTime. Unlike MCO, which moves a rewritten condition to the end of the
// list, it is replaced in place so that the list keeps its order.
func setCondition(status *mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType, st corev1.ConditionStatus, reason, message string, now metav1.Time) {
	c := mcfgv1.MachineConfigPoolCondition{Type: t, Status: st, Reason: reason, Message: message, LastTransitionTime: now}
	old := FindCondition(status, t)
	if old == nil {
		status.Conditions = append(status.Conditions, c)
		return
	}
	if old.Status == st && old.Reason == reason && old.Message == message {
		return
	}
	if old.Status == st {
		c.LastTransitionTime = old.LastTransitionTime
	}
	*old = c
}

func isTrue(conds []mcfgv1.MachineConfigPoolCondition, t mcfgv1.MachineConfigPoolConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
