// Package nodeanno names the Node annotations through which mcotui's agent, controller
// and TUI coordinate, and reads them. The keys under machineconfiguration.openshift.io/
// are MCO's own (its pkg/daemon/constants), with the same meanings, so that a node reads
// the same to mcotui, to MCO's tools and to the people who know them; mcotui.io/ keys
// exist only where MCO has no equivalent.
//
// Everything here is pure: the helpers read a Node object and never the API.
package nodeanno

import corev1 "k8s.io/api/core/v1"

// Prefix is the prefix of MCO's node annotations.
const Prefix = "machineconfiguration.openshift.io/"

// Annotation keys.
const (
	// CurrentConfigKey is the rendered MachineConfig the node runs, written by the agent
	// once an update is validated on disk.
	CurrentConfigKey = Prefix + "currentConfig"
	// DesiredConfigKey is the rendered MachineConfig the node should run, written by
	// the controller (or the TUI driving a rollout).
	DesiredConfigKey = Prefix + "desiredConfig"
	// StateKey is the agent's state: StateWorking, StateDone, StateDegraded or
	// StateUnreconcilable.
	StateKey = Prefix + "state"
	// ReasonKey is the error behind StateDegraded or StateUnreconcilable; empty when
	// Done.
	ReasonKey = Prefix + "reason"
	// DesiredDrainKey is the agent's drain request: "drain-<rendered>" or
	// "uncordon-<rendered>".
	DesiredDrainKey = Prefix + "desiredDrain"
	// LastAppliedDrainKey is the drain request last carried out.
	LastAppliedDrainKey = Prefix + "lastAppliedDrain"
	// PostConfigActionKey is MCO's "post-config-action" annotation, which the agent sets
	// just before it asks for a reboot and clears once the node is back (MCO's
	// constants.MachineConfigDaemonPostConfigAction).
	PostConfigActionKey = Prefix + "post-config-action"

	// CordonedByKey records who made the node unschedulable, when mcotui did: its value
	// is CordonedByAgent. A node that is unschedulable without it was cordoned by
	// someone else (an administrator), and mcotui never uncordons it.
	CordonedByKey = "mcotui.io/cordoned-by"
	// CordonedByAgent is the value of CordonedByKey when the agent cordoned the node.
	CordonedByAgent = "mcotui-agent"
)

// Values of StateKey.
const (
	StateWorking        = "Working"
	StateDone           = "Done"
	StateDegraded       = "Degraded"
	StateUnreconcilable = "Unreconcilable"
)

// Current is the node's current rendered config, or "" when it has none.
func Current(n *corev1.Node) string { return get(n, CurrentConfigKey) }

// Desired is the node's desired rendered config, or "" when it has none.
func Desired(n *corev1.Node) string { return get(n, DesiredConfigKey) }

// State is the node's agent state (StateWorking, ...), or "" when it has none.
func State(n *corev1.Node) string { return get(n, StateKey) }

// Reason is the error text behind a Degraded or Unreconcilable state.
func Reason(n *corev1.Node) string { return get(n, ReasonKey) }

// CordonedBy is who recorded cordoning the node (CordonedByAgent), or "".
func CordonedBy(n *corev1.Node) string { return get(n, CordonedByKey) }

// AdminCordoned reports whether the node is unschedulable and mcotui did not record
// cordoning it: someone else did, and it must stay cordoned after an update.
func AdminCordoned(n *corev1.Node) bool {
	if n == nil || !n.Spec.Unschedulable {
		return false
	}
	_, ours := n.Annotations[CordonedByKey]
	return !ours
}

func get(n *corev1.Node, key string) string {
	if n == nil {
		return ""
	}
	return n.Annotations[key]
}
