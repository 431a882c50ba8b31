// Package nodeanno names the Node annotations through which mcotui's agent, controller
// and TUI coordinate, and reads them. The keys under machineconfiguration.openshift.io/
// are MCO's own (its pkg/daemon/constants), with the same meanings, so that a node reads
// the same to mcotui, to MCO's tools and to the people who know them; mcotui.io/ keys
// exist only where MCO has no equivalent.
//
// Everything here is pure: the helpers read a Node object and never the API.
package nodeanno

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
	// DesiredImageKey and CurrentImageKey are image mode's (On-Cluster Layering): the
	// OS image MCO built for the node's pool, set by MCO's node controller beside
	// desiredConfig, and the one the node booted, set by MCO's daemon.
	DesiredImageKey = Prefix + "desiredImage"
	CurrentImageKey = Prefix + "currentImage"
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

	// RetryKey is the agent's retry of something that failed (an update, a drain
	// attempt): "<attempt> <RFC 3339 time of the next try>", e.g.
	// "3 2026-12-01T16:40:00Z", written when a try fails and removed once one succeeds.
	// MCO publishes no such thing (its daemon only logs its backoff), and an operator
	// asks "is it still trying, and when next?" of a degraded node first.
	RetryKey = "mcotui.io/retry"

	// KernelArgsMethodKey is how the node's host changes kernel arguments, as the agent
	// found it at start: rpm-ostree, ostree, kernel-install, grubby, grub (a drop-in
	// under /etc/default/grub.d and update-grub), or KernelArgsMethodNone. The rollout
	// plan says it for a config that changes kernel arguments, before the node updates.
	KernelArgsMethodKey = "mcotui.io/kernel-arguments-method"
	// KernelArgsMethodNone is KernelArgsMethodKey's value on a host with no way to
	// change kernel arguments: a config that changes them is refused there.
	KernelArgsMethodNone = "none"
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

// DesiredImage is the node's DesiredImageKey annotation, "" without image mode.
func DesiredImage(n *corev1.Node) string { return get(n, DesiredImageKey) }

// CurrentImage is the node's CurrentImageKey annotation, "" without image mode.
func CurrentImage(n *corev1.Node) string { return get(n, CurrentImageKey) }

// State is the node's agent state (StateWorking, ...), or "" when it has none.
func State(n *corev1.Node) string { return get(n, StateKey) }

// Reason is the error text behind a Degraded or Unreconcilable state.
func Reason(n *corev1.Node) string { return get(n, ReasonKey) }

// CordonedBy is who recorded cordoning the node (CordonedByAgent), or "".
func CordonedBy(n *corev1.Node) string { return get(n, CordonedByKey) }

// AdminCordoned reports whether the node is unschedulable and neither mcotui nor MCO
// recorded cordoning it: someone else did, and it must stay cordoned after an update.
func AdminCordoned(n *corev1.Node) bool {
	if n == nil || !n.Spec.Unschedulable {
		return false
	}
	_, ours := n.Annotations[CordonedByKey]
	return !ours && !MCOCordoned(n)
}

// MCOCordoned reports whether MCO's drain handshake accounts for the node being
// cordoned: its daemon has asked for a drain (desiredDrain "drain-<rendered>"), or the
// drain controller carried one out and has not yet uncordoned (lastAppliedDrain
// "drain-<rendered>"). On OpenShift the drain controller cordons with these markers
// rather than mcotui's CordonedByKey, and uncordons once the update completes.
func MCOCordoned(n *corev1.Node) bool {
	if n == nil || !n.Spec.Unschedulable {
		return false
	}
	return strings.HasPrefix(get(n, DesiredDrainKey), "drain-") || strings.HasPrefix(get(n, LastAppliedDrainKey), "drain-")
}

// Retry is a retry the agent has scheduled: the number of the try that failed (1 for
// the first failure) and when the next one is due.
type Retry struct {
	Attempt int
	Next    time.Time
}

// String is the value of RetryKey for r.
func (r Retry) String() string {
	return strconv.Itoa(r.Attempt) + " " + r.Next.UTC().Format(time.RFC3339)
}

// ParseRetry reads a value of RetryKey.
func ParseRetry(s string) (Retry, error) {
	count, next, ok := strings.Cut(s, " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return Retry{}, fmt.Errorf("retry annotation %q: want \"<attempt> <RFC 3339 time>\"", s)
	}
	t, err := time.Parse(time.RFC3339, next)
	if err != nil {
		return Retry{}, fmt.Errorf("retry annotation %q: %w", s, err)
	}
	return Retry{Attempt: n, Next: t}, nil
}

// RetryOf is the node's scheduled retry; ok is false when it has none, or an unreadable
// one (a reader shows nothing rather than a wrong count).
func RetryOf(n *corev1.Node) (r Retry, ok bool) {
	v := get(n, RetryKey)
	if v == "" {
		return Retry{}, false
	}
	r, err := ParseRetry(v)
	return r, err == nil
}

func get(n *corev1.Node, key string) string {
	if n == nil {
		return ""
	}
	return n.Annotations[key]
}
