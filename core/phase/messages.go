package phase

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conditions of each phase, with MCO's messages word for word where MCO has one, so
// that tools and people who know MCO's MachineConfigNodes read mcotui's the same way.

// Incompatible: the change cannot be applied to a running node.
func Incompatible(from, to, reasons string) Condition {
	return Condition{Type: UpdatePrepared, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Update Failed compatibility validation. MachineConfigs %s and %s are not compatible. Err: %s", from, to, reasons)}
}

// Prepared: the change is compatible; actions are the post-config actions as text.
func Prepared(actions string, drain bool) Condition {
	return Condition{Type: UpdatePrepared, Status: metav1.ConditionTrue,
		Message: fmt.Sprintf("Update Compatible. Post Cfg Actions: %s Drain Required: %t", actions, drain)}
}

// Executing is the UpdateExecuted parent while its children run.
func Executing() Condition {
	return Condition{Type: UpdateExecuted, Status: metav1.ConditionUnknown, Message: "Update is executing."}
}

// Executed is the UpdateExecuted parent once files and OS are applied.
func Executed() Condition {
	return Condition{Type: UpdateExecuted, Status: metav1.ConditionTrue, Message: "Update has been executed."}
}

// CordonDone: the node is unschedulable.
func CordonDone() Condition {
	return Condition{Type: Cordoned, Status: metav1.ConditionTrue, Message: "Cordoned node. The node is reporting Unschedulable = true"}
}

// CordonFailed: the cordon patch failed.
func CordonFailed(err error) Condition {
	return Condition{Type: Cordoned, Status: metav1.ConditionUnknown, Message: fmt.Sprintf("Error: Failed to Cordon node: %v", err)}
}

// DrainNotRequired: the actions need no drain.
func DrainNotRequired() Condition {
	return Condition{Type: Drained, Status: metav1.ConditionFalse, Message: "Node Drain Not required for this update."}
}

// Draining: the drain toward desired has started.
func Draining(desired, current string) Condition {
	return Condition{Type: Drained, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Draining node. The drain will not be complete until desired drainer %s matches current drainer %s", desired, current)}
}

// DrainFailed: the drain has not succeeded yet; blockers says which pods and budgets
// hold it.
func DrainFailed(blockers string) Condition {
	return Condition{Type: Drained, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Error: Node Drain has not succeeded. Error is: %s", blockers)}
}

// DrainDone: every pod that must leave has left.
func DrainDone(drainer string) Condition {
	return Condition{Type: Drained, Status: metav1.ConditionTrue,
		Message: fmt.Sprintf("Drained node. The drain is complete as the desired drainer matches current drainer: %s", drainer)}
}

// Applying: files and OS are being written.
func Applying(os, ssh bool) Condition {
	return Condition{Type: AppliedFilesAndOS, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Applying files and new OS config to node. OS will %sneed an update. SSH Keys will %sneed an update", not(os), not(ssh))}
}

// Applied: files and OS are written.
func Applied(os, ssh bool) Condition {
	return Condition{Type: AppliedFilesAndOS, Status: metav1.ConditionTrue,
		Message: fmt.Sprintf("Applied files and new OS config to node. OS did %sneed an update. SSH Keys did %sneed an update", not(os), not(ssh))}
}

// ApplyFailed: writing files or OS failed and was rolled back.
func ApplyFailed(err error) Condition {
	return Condition{Type: AppliedFilesAndOS, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Error: Failed to apply files and new OS config to node: %v", err)}
}

// NoRebootNeeded: the post-config actions ran and no reboot is needed.
func NoRebootNeeded() Condition {
	return Condition{Type: UpdatePostActionComplete, Status: metav1.ConditionTrue, Reason: "None",
		Message: "Changes do not require a reboot"}
}

// ServicesReloaded: the post-config actions reloaded or restarted units.
func ServicesReloaded(what string) Condition {
	return Condition{Type: UpdatePostActionComplete, Status: metav1.ConditionTrue,
		Message: fmt.Sprintf("Node has reloaded service %s", what)}
}

// RebootRequired: the node is about to reboot.
func RebootRequired() Condition {
	return Condition{Type: RebootedNode, Status: metav1.ConditionUnknown, Message: "Upgrade requires a reboot."}
}

// RebootDone: the node came back from the reboot.
func RebootDone() Condition {
	return Condition{Type: RebootedNode, Status: metav1.ConditionTrue, Message: "Node has rebooted"}
}

// ResumedIn: the node runs config and is back to normal operation.
func ResumedIn(config string) Condition {
	return Condition{Type: Resumed, Status: metav1.ConditionTrue,
		Message: fmt.Sprintf("In desired config %s. Resumed normal operations. Applying proper annotations.", config)}
}

// Completing is the UpdateComplete parent once the node is uncordoned.
func Completing() Condition {
	return Condition{Type: UpdateComplete, Status: metav1.ConditionTrue, Message: "Uncordoned Node as part of completing upgrade phase"}
}

// UncordonDone: the node is schedulable again (or was left cordoned by its admin; the
// message says so).
func UncordonDone(adminCordoned bool) Condition {
	if adminCordoned {
		return Condition{Type: Uncordoned, Status: metav1.ConditionTrue,
			Message: "Node left cordoned: it was cordoned before the update began. The node is reporting Unschedulable = true"}
	}
	return Condition{Type: Uncordoned, Status: metav1.ConditionTrue, Message: "UnCordoned node. The node is reporting Unschedulable = false"}
}

// NeedsUpdate: the node's desired config differs from its current one.
func NeedsUpdate(node string) Condition {
	return Condition{Type: Updated, Status: metav1.ConditionFalse, Message: fmt.Sprintf("Node %s needs an update", node)}
}

// UpToDate: the node runs its desired config.
func UpToDate(node string) Condition {
	return Condition{Type: Updated, Status: metav1.ConditionTrue, Message: fmt.Sprintf("Node %s Updated", node)}
}

// Degraded: the update of node failed; err says how.
func Degraded(node string, err error) Condition {
	return Condition{Type: NodeDegraded, Status: metav1.ConditionTrue, Message: fmt.Sprintf("Node %s upgrade failure. %v", node, err)}
}

// NotDegraded: the update of node succeeded.
func NotDegraded(node string) Condition {
	return Condition{Type: NodeDegraded, Status: metav1.ConditionFalse, Message: fmt.Sprintf("Node %s upgrade succeeded", node)}
}

func not(b bool) string {
	if b {
		return ""
	}
	return "not "
}
