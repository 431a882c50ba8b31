package imagemode

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBuilderJob: the Job status.builder names wins; before MCO writes it, the Job is
// where MCO creates it (utils.GetBuildJobName: "build-" + the build's name, in MCO's
// namespace).
func TestBuilderJob(t *testing.T) {
	b := &mcfgv1.MachineOSBuild{ObjectMeta: metav1.ObjectMeta{Name: "worker-5c2f"}}
	if ns, name := BuilderJob(b); ns != BuilderNamespace || name != "build-worker-5c2f" {
		t.Errorf("BuilderJob without status.builder = %s/%s", ns, name)
	}
	b.Status.Builder = &mcfgv1.MachineOSBuilderReference{ImageBuilderType: mcfgv1.JobBuilder,
		Job: &mcfgv1.ObjectReference{Group: "batch", Resource: "jobs", Namespace: "ocl", Name: "build-x"}}
	if ns, name := BuilderJob(b); ns != "ocl" || name != "build-x" {
		t.Errorf("BuilderJob = %s/%s, want ocl/build-x from status.builder", ns, name)
	}
}

// TestWhy: a failed or interrupted build says why with its condition's reason and
// message (MCO's MachineOSBuildFailedConditions); any other build says nothing.
func TestWhy(t *testing.T) {
	cond := func(t mcfgv1.BuildProgress, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"failed", []metav1.Condition{cond(mcfgv1.MachineOSBuilding, metav1.ConditionFalse, "Building", "Image Build In Progress"),
			cond(mcfgv1.MachineOSBuildFailed, metav1.ConditionTrue, "Failed", "Build Failed")}, "Failed: Build Failed"},
		{"interrupted", []metav1.Condition{cond(mcfgv1.MachineOSBuildInterrupted, metav1.ConditionTrue, "Interrupted", "Build Interrupted")}, "Interrupted: Build Interrupted"},
		{"reason only", []metav1.Condition{cond(mcfgv1.MachineOSBuildFailed, metav1.ConditionTrue, "Failed", "")}, "Failed"},
		{"building", []metav1.Condition{cond(mcfgv1.MachineOSBuilding, metav1.ConditionTrue, "Building", "Image Build In Progress"),
			cond(mcfgv1.MachineOSBuildFailed, metav1.ConditionFalse, "Failed", "Build Failed")}, ""},
	} {
		b := &mcfgv1.MachineOSBuild{Status: mcfgv1.MachineOSBuildStatus{Conditions: tc.conds}}
		if got := Why(b); got != tc.want {
			t.Errorf("%s: Why = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRebuildPending: the annotation's presence is the request, whatever its value,
// as MCO's hasRebuildAnnotation reads it.
func TestRebuildPending(t *testing.T) {
	m := &mcfgv1.MachineOSConfig{}
	if RebuildPending(m) {
		t.Error("pending without the annotation")
	}
	m.Annotations = map[string]string{RebuildAnnotation: ""}
	if !RebuildPending(m) {
		t.Error("not pending with the annotation empty, as oc annotate NAME KEY= writes it")
	}
}
