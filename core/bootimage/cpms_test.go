package bootimage_test

import (
	"errors"
	"strings"
	"testing"

	machinev1 "github.com/openshift/api/machine/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

// cpmsOf wraps the AWS MachineSet fixture's machine template in a
// ControlPlaneMachineSet, as openshift-machine-api/cluster holds it.
func cpmsOf(t *testing.T) *machinev1.ControlPlaneMachineSet {
	ms := awsMachineSet(t)
	c := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: bootimage.MachineAPINamespace, Annotations: ms.Annotations}}
	c.Spec.Template.MachineType = machinev1.OpenShiftMachineV1Beta1MachineType
	c.Spec.Template.OpenShiftMachineV1Beta1Machine = &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
		ObjectMeta: machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: ms.Spec.Template.Labels},
		Spec:       ms.Spec.Template.Spec,
	}
	return c
}

// TestReconcileCPMS: the control-plane template's AMI is replaced as a MachineSet's
// would be, by a merge patch of the ControlPlaneMachineSet's template (MCO's
// cpms_helpers.go); owner references and other OS streams are skipped.
func TestReconcileCPMS(t *testing.T) {
	r, err := bootimage.ReconcileCPMS(cpmsOf(t), loadStream(t), aws)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"machines_v1beta1_machine_openshift_io":{"spec":{"providerSpec":{"value":{"ami":{"id":"` + awsUSEast1 + `"}}}}}}}}`
	if r.Outcome != bootimage.Patch || string(r.Patch) != want || r.Current != awsOldAMI {
		t.Errorf("result %+v\npatch %s\nwant  %s", r, r.Patch, want)
	}

	owned := cpmsOf(t)
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "HostedControlPlane", Name: "hcp"}}
	if r, err := bootimage.ReconcileCPMS(owned, loadStream(t), aws); err != nil || r.Outcome != bootimage.Skipped || r.Skip.Reason != bootimage.SkipOwnerReference {
		t.Errorf("owned: %+v, %v", r, err)
	}
	rhel10 := cpmsOf(t)
	rhel10.Labels = map[string]string{bootimage.OSStreamLabel: "rhel-10"}
	if r, err := bootimage.ReconcileCPMS(rhel10, loadStream(t), aws); err != nil || r.Outcome != bootimage.Skipped || r.Skip.Reason != bootimage.SkipOSStream {
		t.Errorf("rhel-10 stream: %+v, %v", r, err)
	}
}

// TestCPMSMode: None without a manager (MCO's operator default), All or None as set,
// Partial refused with the CRD's CEL message.
func TestCPMSMode(t *testing.T) {
	cpms := func(mode operatorv1.MachineManagerSelectorMode) []operatorv1.MachineManager {
		return []operatorv1.MachineManager{
			{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.Partial}},
			{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: mode}},
		}
	}
	if m, err := bootimage.CPMSMode(nil); m != operatorv1.None || err != nil {
		t.Errorf("no manager: %s %v", m, err)
	}
	if m, err := bootimage.CPMSMode(cpms(operatorv1.All)); m != operatorv1.All || err != nil {
		t.Errorf("All: %s %v", m, err)
	}
	_, err := bootimage.CPMSMode(cpms(operatorv1.Partial))
	if err == nil || !strings.Contains(err.Error(), "machineManagers[1].selection.mode \"Partial\": Only All or None selection mode is permitted for ControlPlaneMachineSets") {
		t.Errorf("Partial: %v", err)
	}
}

// TestCheckCPMS is MCO's syncControlPlaneMachineSets: mode None enrolls none, All
// every one; each failure is worded "error syncing ControlPlaneMachineSet NAME: ...",
// and one left alone counts as reconciled, never skipped; vSphere and other platforms
// than AWS, Azure and GCP are left alone (checkControlPlaneMachineSet).
func TestCheckCPMS(t *testing.T) {
	all := []operatorv1.MachineManager{{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}
	cpms := []*machinev1.ControlPlaneMachineSet{cpmsOf(t)}
	if r := bootimage.CheckCPMS(nil, cpms, loadStream(t), nil, aws); r.Mode != operatorv1.None || r.Stats().Total != 0 || r.Stats().Errored != 0 {
		t.Errorf("None: %+v %+v", r, r.Stats())
	}
	r := bootimage.CheckCPMS(all, cpms, loadStream(t), nil, aws)
	if len(r.Patches()) != 1 || r.Stats().Reconciled != 1 || r.Stats().Total != 1 {
		t.Errorf("All: %+v %+v", r, r.Stats())
	}
	if got, want := bootimage.ProgressingMessage(bootimage.Stats{}, r.Stats()), "Reconciled 0 of 0 MAPI MachineSets | Reconciled 1 of 1 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments"; got != want {
		t.Errorf("message %q\nwant    %q", got, want)
	}
	r = bootimage.CheckCPMS(all, cpms, nil, errors.New("configmap missing"), aws)
	st := r.Stats()
	if st.Errored != 1 || len(r.Errors) != 1 || r.Errors[0].Error() != "error syncing ControlPlaneMachineSet cluster: configmap missing" {
		t.Errorf("no stream: %+v %v", st, r.Errors)
	}
	if got, want := bootimage.DegradedMessage(bootimage.Stats{}, st, r.Errors[0]), "0 Degraded MAPI MachineSets | 1 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments | Error(s): error syncing ControlPlaneMachineSet cluster: configmap missing"; got != want {
		t.Errorf("message %q\nwant    %q", got, want)
	}
	vsphere := bootimage.Options{Platform: "VSphere"}
	bare := cpmsOf(t)
	bare.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw = []byte(`{"kind":"VSphereMachineProviderSpec"}`)
	r = bootimage.CheckCPMS(all, []*machinev1.ControlPlaneMachineSet{bare}, loadStream(t), nil, vsphere)
	if len(r.Results) != 1 || r.Results[0].Skip.Reason != bootimage.SkipUnsupportedPlatform || r.Stats().Reconciled != 1 || len(r.Stats().Skipped) != 0 {
		t.Errorf("vSphere: %+v %+v", r, r.Stats())
	}
}

// TestCPMSHotLoop is MCO's checkControlPlaneMachineSetHotLoop: the same patch a
// fourth time in a row is refused; a different one starts the count again.
func TestCPMSHotLoop(t *testing.T) {
	var g bootimage.HotLoopGuard
	for i := range bootimage.HotLoopLimit {
		if !g.Allow("cluster", []byte("a")) {
			t.Fatalf("patch %d refused", i+1)
		}
	}
	if g.Allow("cluster", []byte("a")) {
		t.Error("the fourth identical patch was allowed")
	}
	if !g.Allow("cluster", []byte("b")) || !g.Allow("cluster", []byte("a")) {
		t.Error("a different patch did not start the count again")
	}
}

// TestMachineSetOSStreamLabel is MCO's TestSyncMAPIMachineSetOSStreamLabel: a
// MachineSet labelled for a stream other than rhel-9 is left alone (and not counted as
// skipped); rhel-9 or no label goes on to be reconciled.
func TestMachineSetOSStreamLabel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		label string
		skip  bool
	}{
		{"unsupported stream rhel-10 should skip", "rhel-10", true},
		{"unsupported custom stream should skip", "custom-stream", true},
		{"supported stream rhel-9 should continue processing", bootimage.SupportedOSStream, false},
		{"no osstream label should continue processing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := awsMachineSet(t)
			if tc.label != "" {
				ms.Labels = map[string]string{bootimage.OSStreamLabel: tc.label}
			}
			r, err := bootimage.Reconcile(ms, loadStream(t), aws)
			if err != nil {
				t.Fatal(err)
			}
			if skipped := r.Outcome == bootimage.Skipped && r.Skip.Reason == bootimage.SkipOSStream; skipped != tc.skip {
				t.Errorf("result %+v, want skipped for its stream: %t", r, tc.skip)
			}
			if tc.skip && r.Skip.Reason.LeavesSkew() {
				t.Error("counted as skipped; MCO does not count it")
			}
		})
	}
}

// TestHotLoopAsMCO is MCO's TestHotLoop: HotLoopLimit+1 patches to the same value are
// a hot loop, fewer are not, and patches to a changing value never are.
func TestHotLoopAsMCO(t *testing.T) {
	for _, tc := range []struct {
		name    string
		next    func(string) string
		updates int
		want    bool
	}{
		{"Hot loop detected due to multiple updates to same value", func(s string) string { return s }, bootimage.HotLoopLimit + 1, true},
		{"Hot loop not detected due to update count being lower than threshold", func(s string) string { return s }, bootimage.HotLoopLimit - 1, false},
		{"Hot loop not detected due to target boot image changing", func(s string) string { return s + "-1" }, bootimage.HotLoopLimit + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g bootimage.HotLoopGuard
			v := "boot-image-1"
			for range tc.updates - 1 {
				if !g.Allow("machine-set-1", []byte(v)) {
					t.Fatal("hot loop detected early")
				}
				v = tc.next(v)
			}
			if got := !g.Allow("machine-set-1", []byte(v)); got != tc.want {
				t.Errorf("hot loop = %t, want %t", got, tc.want)
			}
		})
	}
}
