package bootimage_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 5, 1, 19, 30, 13, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Hour))
	t2 = metav1.NewTime(t0.Add(2 * time.Hour))
)

func TestMessages(t *testing.T) {
	stats := bootimage.Stats{Total: 4, Reconciled: 2}
	if got, want := bootimage.ProgressingMessage(stats, bootimage.Stats{}), "Reconciled 2 of 4 MAPI MachineSets | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments"; got != want {
		t.Errorf("progressing:\n got %q\nwant %q", got, want)
	}
	// MCO's getProgressingStatusMessage: "Reconciled (inProgress-skipped) of total (N
	// skipped)", N counting only the MachineSets something blocked (reconcileSkipped);
	// Windows and other OS streams are reconciled, not skipped (syncMAPIMachineSet).
	stats.Skipped = []bootimage.Skip{{MachineSet: "a", Reason: bootimage.SkipCustomImage}, {MachineSet: "w", Reason: bootimage.SkipWindows}, {MachineSet: "r10", Reason: bootimage.SkipOSStream}}
	if got, want := bootimage.ProgressingMessage(stats, bootimage.Stats{}), "Reconciled 1 of 4 MAPI MachineSets (1 skipped) | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments"; got != want {
		t.Errorf("progressing with a skip:\n got %q\nwant %q", got, want)
	}
	if got, want := bootimage.DegradedMessage(bootimage.Stats{}, bootimage.Stats{}, nil), "0 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments"; got != want {
		t.Errorf("degraded:\n got %q\nwant %q", got, want)
	}
	err := bootimage.SyncError("worker-a", errors.New("converting ignition stub failed: boom"))
	if got, want := bootimage.DegradedMessage(bootimage.Stats{Errored: 1}, bootimage.Stats{}, err), "1 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments | Error(s): error syncing MAPI MachineSet worker-a: converting ignition stub failed: boom"; got != want {
		t.Errorf("degraded with an error:\n got %q\nwant %q", got, want)
	}
}

func TestSetConditions(t *testing.T) {
	other := metav1.Condition{Type: "NodeDisruptionPolicyProgressing", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: t0}
	conds := []metav1.Condition{other}

	// A sync starts: 0 of 2 done.
	conds = bootimage.SetConditions(conds, "BootImageUpdateConfigurationUpdated", bootimage.Stats{Total: 2}, bootimage.Stats{}, nil, t0)
	progressing := find(t, conds, bootimage.ConditionProgressing)
	if progressing.Status != metav1.ConditionTrue || progressing.Reason != "BootImageUpdateConfigurationUpdated" || !progressing.LastTransitionTime.Equal(&t0) {
		t.Errorf("progressing = %+v", progressing)
	}
	if d := find(t, conds, bootimage.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("degraded = %+v", d)
	}

	// It goes on: still progressing, the same transition time.
	conds = bootimage.SetConditions(conds, "BootImageUpdateConfigurationUpdated", bootimage.Stats{Total: 2, Reconciled: 1}, bootimage.Stats{}, nil, t1)
	progressing = find(t, conds, bootimage.ConditionProgressing)
	if !strings.HasPrefix(progressing.Message, "Reconciled 1 of 2 MAPI MachineSets |") || !progressing.LastTransitionTime.Equal(&t0) {
		t.Errorf("progressing = %+v", progressing)
	}

	// It ends with two failures: not progressing, degraded with both errors.
	errs := []error{
		bootimage.SyncError("a", errors.New("boom")),
		bootimage.SyncError("b", errors.New("bang")),
	}
	conds = bootimage.SetConditions(conds, "MAPIMachinesetUpdated", bootimage.Stats{Total: 2, Errored: 2}, bootimage.Stats{}, errs, t2)
	progressing = find(t, conds, bootimage.ConditionProgressing)
	if progressing.Status != metav1.ConditionFalse || !progressing.LastTransitionTime.Equal(&t2) || progressing.Reason != "MAPIMachinesetUpdated" {
		t.Errorf("progressing = %+v", progressing)
	}
	degraded := find(t, conds, bootimage.ConditionDegraded)
	want := "2 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments | Error(s): [error syncing MAPI MachineSet a: boom, error syncing MAPI MachineSet b: bang]"
	if degraded.Status != metav1.ConditionTrue || degraded.Message != want || !degraded.LastTransitionTime.Equal(&t2) {
		t.Errorf("degraded = %+v\nwant message %q", degraded, want)
	}
	if len(conds) != 3 || conds[0] != other {
		t.Errorf("the other condition was changed: %+v", conds)
	}
}

func find(t *testing.T, conds []metav1.Condition, typ string) metav1.Condition {
	t.Helper()
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", typ, conds)
	return metav1.Condition{}
}

func TestHotLoopGuard(t *testing.T) {
	var g bootimage.HotLoopGuard
	spec := []byte(`{"ami":{"id":"ami-1"}}`)
	for i := range bootimage.HotLoopLimit {
		if err := g.Check("a", spec); err != nil {
			t.Fatalf("patch %d: %v", i+1, err)
		}
	}
	if err := g.Check("b", spec); err != nil {
		t.Errorf("another MachineSet: %v", err)
	}
	err := g.Check("a", spec)
	if err == nil || err.Error() != "refusing to reconcile machineset a, hot loop detected. Please opt-out of boot image updates, adjust your machine provisioning workflow to prevent hot loops and opt back in to resume boot image updates" {
		t.Errorf("fourth identical patch: %v", err)
	}
	if err := g.Check("a", []byte(`{"ami":{"id":"ami-2"}}`)); err != nil {
		t.Errorf("a different patch: %v", err)
	}
	g.Reset()
	for range bootimage.HotLoopLimit {
		if err := g.Check("a", spec); err != nil {
			t.Fatalf("after Reset: %v", err)
		}
	}
}
