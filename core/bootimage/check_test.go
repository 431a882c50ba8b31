package bootimage_test

import (
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

// TestCheck runs a whole dry run on AWS: four MachineSets, one patched, one up to date,
// one owned by another object, one in a region the stream does not cover, and one
// whose providerSpec is broken.
func TestCheck(t *testing.T) {
	patched := awsMachineSet(t)
	current := awsMachineSet(t)
	current.Name = "worker-current"
	editProviderSpec(t, current, func(v map[string]any) { v["ami"] = map[string]any{"id": awsUSEast1} })
	owned := awsMachineSet(t)
	owned.Name = "worker-owned"
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "md"}}
	far := awsMachineSet(t)
	far.Name = "worker-far"
	editProviderSpec(t, far, func(v map[string]any) { v["placement"].(map[string]any)["region"] = "me-central-1" })
	broken := awsMachineSet(t)
	broken.Name = "worker-broken"
	broken.Spec.Template.Spec.ProviderSpec.Value = nil
	unlabelled := awsMachineSet(t)
	unlabelled.Name = "worker-unlabelled"
	delete(unlabelled.Labels, "update-boot-image")

	managers := []operatorv1.MachineManager{manager(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: map[string]string{"update-boot-image": "true"}})}
	rep, err := bootimage.Check(managers, []*machinev1beta1.MachineSet{unlabelled, broken, far, owned, current, patched}, loadStream(t), nil, aws)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]bootimage.Outcome{}
	for _, r := range rep.Results {
		outcomes[r.MachineSet] = r.Outcome
	}
	want := map[string]bootimage.Outcome{
		patched.Name:     bootimage.Patch,
		"worker-current": bootimage.UpToDate,
		"worker-far":     bootimage.Skipped,
	}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("outcomes = %v, want %v", outcomes, want)
	}
	if p := rep.Patches(); len(p) != 1 || p[0].MachineSet != patched.Name {
		t.Errorf("patches = %+v", p)
	}
	if len(rep.Errors) != 1 || !strings.HasPrefix(rep.Errors[0].Error(), "error syncing MAPI MachineSet worker-broken: machineset worker-broken: spec.template.spec.providerSpec.value is empty") {
		t.Errorf("errors = %v", rep.Errors)
	}
	if !reflect.DeepEqual(rep.Selection.NotSelected, []string{"worker-unlabelled"}) {
		t.Errorf("not selected = %v", rep.Selection.NotSelected)
	}

	stats := rep.Stats()
	if stats.Total != 5 || stats.Reconciled != 4 || stats.Errored != 1 || len(stats.Skipped) != 2 ||
		stats.Skipped[0].MachineSet != "worker-far" || stats.Skipped[1].MachineSet != "worker-owned" {
		t.Errorf("stats = %+v", stats)
	}
	if got, want := bootimage.ProgressingMessage(stats, bootimage.Stats{}), "Reconciled 2 of 5 MAPI MachineSets (2 skipped) | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments"; got != want {
		t.Errorf("progressing = %q, want %q", got, want)
	}
}

func TestCheckNone(t *testing.T) {
	rep, err := bootimage.Check(nil, []*machinev1beta1.MachineSet{awsMachineSet(t)}, loadStream(t), nil, bootimage.Options{Platform: configv1.OpenStackPlatformType})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Selection.Mode != operatorv1.None || len(rep.Results) != 0 || rep.Stats().Total != 0 {
		t.Errorf("report = %+v", rep)
	}
	if !rep.Stats().Finished() {
		t.Error("nothing to do is finished")
	}
}
