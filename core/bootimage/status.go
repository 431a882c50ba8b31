package bootimage

import (
	"fmt"
	"slices"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The conditions MCO's boot image controller writes on MachineConfiguration/cluster.
const (
	ConditionProgressing = operatorv1.MachineConfigurationBootImageUpdateProgressing
	ConditionDegraded    = operatorv1.MachineConfigurationBootImageUpdateDegraded
)

// Stats count one sync of the enrolled Machine API MachineSets, as MCO's
// MachineResourceStats do.
type Stats struct {
	// Total is the number of MachineSets the mode selects, skipped ones included.
	Total int
	// Reconciled counts those done without error: patched, up to date or skipped.
	Reconciled int
	// Errored counts those that failed.
	Errored int
	// Skipped are the MachineSets left alone, a subset of Reconciled.
	Skipped []Skip
}

// Finished reports whether every MachineSet has been dealt with.
func (s Stats) Finished() bool { return s.Total == s.Reconciled+s.Errored }

// ProgressingMessage is the BootImageUpdateProgressing message of MCO's
// updateConditions (pkg/controller/bootimage/boot_image_controller.go): "Reconciled 2
// of 4 MAPI MachineSets | Reconciled 1 of 1 ControlPlaneMachineSets | Reconciled 0 of 0
// CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments", with " (N skipped)"
// after the MachineSets when some were skipped, which are then not among the
// reconciled. See Summary for the names of all left alone. MCO never
// counts a ControlPlaneMachineSet as skipped (cpms_helpers.go): one left alone is
// reconciled.
func ProgressingMessage(mapi, cpms Stats) string {
	// MCO counts as skipped only the MachineSets whose boot image something blocked
	// (reconcileSkipped: SkipReason.LeavesSkew) and takes them out of the reconciled
	// count; Windows, other OS streams and unsupported platforms are reconciled
	// (getProgressingStatusMessage, syncMAPIMachineSet).
	reconciled, skipped := mapi.Reconciled, ""
	n := 0
	for _, sk := range mapi.Skipped {
		if sk.Reason.LeavesSkew() {
			n++
		}
	}
	if n > 0 {
		reconciled -= n
		skipped = fmt.Sprintf(" (%d skipped)", n)
	}
	return fmt.Sprintf("Reconciled %d of %d MAPI MachineSets%s | Reconciled %d of %d ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments",
		reconciled, mapi.Total, skipped, cpms.Reconciled, cpms.Total)
}

// DegradedMessage is the BootImageUpdateDegraded message of MCO's updateConditions:
// "1 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI
// MachineSets | 0 CAPI MachineDeployments", then " | Error(s): <err>" when the sync
// failed.
func DegradedMessage(mapi, cpms Stats, syncErr error) string {
	msg := fmt.Sprintf("%d Degraded MAPI MachineSets | %d Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments", mapi.Errored, cpms.Errored)
	if syncErr != nil {
		msg += " | Error(s): " + syncErr.Error()
	}
	return msg
}

// SyncError is how MCO words the failure of one MachineSet in the Degraded message.
func SyncError(machineSet string, err error) error {
	return fmt.Errorf("error syncing MAPI MachineSet %s: %v", machineSet, err)
}

// SetConditions returns conds with BootImageUpdateProgressing and
// BootImageUpdateDegraded set for a sync of the Machine API MachineSets (mapi) and the
// ControlPlaneMachineSets (cpms): Progressing is True until every one is dealt with;
// Degraded is True when errs holds an error (the sync's own, such as a bad selector or stream metadata, and SyncError for each
// failed MachineSet), which MCO aggregates into the message. reason is MCO's trigger,
// such as "BootImageUpdateConfigurationUpdated" or "MAPIMachinesetUpdated".
//
// A condition's lastTransitionTime changes when its status does (MCO also moves it when
// only the message changes). Other conditions are kept; conds is not modified.
func SetConditions(conds []metav1.Condition, reason string, mapi, cpms Stats, errs []error, now metav1.Time) []metav1.Condition {
	out := slices.Clone(conds)
	progressing := metav1.ConditionTrue
	if mapi.Finished() && cpms.Finished() {
		progressing = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&out, metav1.Condition{
		Type: ConditionProgressing, Status: progressing, Reason: reason,
		Message: ProgressingMessage(mapi, cpms), LastTransitionTime: now,
	})
	syncErr := utilerrors.NewAggregate(errs)
	degraded := metav1.ConditionFalse
	if syncErr != nil {
		degraded = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&out, metav1.Condition{
		Type: ConditionDegraded, Status: degraded, Reason: reason,
		Message: DegradedMessage(mapi, cpms, syncErr), LastTransitionTime: now,
	})
	return out
}
