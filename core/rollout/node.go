package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// ZoneLabel is the label candidates are grouped by, so that a rollout finishes one
// zone before it starts the next (MCO's zoneLabel).
const ZoneLabel = corev1.LabelTopologyZone

// CheckReady says why a node cannot take workloads, in the words of MCO's
// CheckNodeReady, or returns nil: its Ready condition is not True, DiskPressure or
// NetworkUnavailable is not False, or it is cordoned (an administrator's cordon counts
// as much as the agent's).
//
// MCO passes a node that reports no Ready condition at all; mcotui does not, since
// such a node's kubelet has not reported yet and nothing is known about it.
func CheckReady(n *corev1.Node) error {
	reported := false
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		switch c.Type {
		case corev1.NodeReady:
			if c.Status != corev1.ConditionTrue {
				return fmt.Errorf("node %s is reporting NotReady=%v", n.Name, c.Status)
			}
			reported = true
		case corev1.NodeDiskPressure:
			if c.Status != corev1.ConditionFalse {
				return fmt.Errorf("node %s is reporting OutOfDisk=%v", n.Name, c.Status)
			}
		case corev1.NodeNetworkUnavailable:
			if c.Status != corev1.ConditionFalse {
				return fmt.Errorf("node %s is reporting NetworkUnavailable=%v", n.Name, c.Status)
			}
		}
	}
	if !reported {
		return fmt.Errorf("node %s reports no Ready condition yet", n.Name)
	}
	if n.Spec.Unschedulable {
		return fmt.Errorf("node %s is reporting Unschedulable", n.Name)
	}
	return nil
}

// Ready reports whether CheckReady passes.
func Ready(n *corev1.Node) bool { return CheckReady(n) == nil }

// Done reports whether the node's agent has finished its last update: current and
// desired config are set and equal, and its state is Done (MCO's IsNodeDone).
func Done(n *corev1.Node) bool {
	return done(nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n))
}

// DoneAt reports whether the node is Done at config target (MCO's IsDone against the
// pool): the node counts as updated.
func DoneAt(n *corev1.Node, target string) bool {
	return Done(n) && nodeanno.Desired(n) == target
}

// Failing reports whether the node's agent gave up on its desired config: current and
// desired differ and the state is Degraded or Unreconcilable (MCO's IsNodeMCDFailing).
// A failing node may be given a new target.
func Failing(n *corev1.Node) bool {
	return failing(nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n))
}

// Degraded reports whether the node counts toward the pool's degraded machines: it has
// a desired config and its state is Degraded or Unreconcilable (MCO's
// getDegradedMachines). Unlike Failing, this includes a node whose current config is
// its desired one, such as a node that detected config drift.
func Degraded(n *corev1.Node) bool {
	return IsDegraded(nodeanno.Desired(n), nodeanno.State(n))
}

// IsDegraded is Degraded for a node whose desired config and agent state are known
// already (the TUI joins them from the Node and its MachineConfigNode).
func IsDegraded(desired, state string) bool {
	return desired != "" && isDegradedState(state)
}

// Unavailable reports whether the node counts against the pool's maxUnavailable (MCO's
// IsUnavailableForUpdate): it is not Ready (see CheckReady), or it is neither Done nor
// Failing, that is its agent is working on an update or has not picked one up yet.
func Unavailable(n *corev1.Node) bool {
	return unavailable(Ready(n), nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n))
}

func done(current, desired, state string) bool {
	return current != "" && current == desired && state == nodeanno.StateDone
}

func failing(current, desired, state string) bool {
	return current != desired && isDegradedState(state)
}

func unavailable(ready bool, current, desired, state string) bool {
	return !ready || (!done(current, desired, state) && !failing(current, desired, state))
}

func isDegradedState(s string) bool {
	return s == nodeanno.StateDegraded || s == nodeanno.StateUnreconcilable
}
