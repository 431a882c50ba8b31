package imagemode

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations MCO's build controller reads on a MachineOSConfig
// (pkg/controller/build/constants/constants.go).
const (
	// RebuildAnnotation asks for the current build to be done again: MCO deletes the
	// MachineOSBuild that CurrentBuildAnnotation names, creates a new one, and removes
	// the annotation once that build is done (reconciler.go rebuildMachineOSConfig,
	// updateMachineOSConfigStatus). Its value is not read.
	RebuildAnnotation = "machineconfiguration.openshift.io/rebuild"
	// CurrentBuildAnnotation names the MachineOSConfig's current MachineOSBuild. A
	// MachineOSConfig without it is not rebuilt: MCO skips the rebuild annotation.
	CurrentBuildAnnotation = "machineconfiguration.openshift.io/current-machine-os-build"
)

// Where MCO runs its builds (pkg/controller/build/buildrequest): a Job named
// "build-<MachineOSBuild>" in MCO's namespace, whose pod's BuilderContainer runs buildah.
const (
	BuilderNamespace = "openshift-machine-config-operator"
	BuilderContainer = "image-build"
	// JobNameLabel is the label the Job controller puts on a Job's pods.
	JobNameLabel = "batch.kubernetes.io/job-name"
)

// BuilderJob is the namespace and name of the Job that builds mosb: the one its
// status.builder names, else the name MCO gives it (GetBuildJobName) before it says so.
func BuilderJob(mosb *mcfgv1.MachineOSBuild) (namespace, name string) {
	namespace, name = BuilderNamespace, "build-"+mosb.Name
	if b := mosb.Status.Builder; b != nil && b.Job != nil {
		if b.Job.Namespace != "" {
			namespace = b.Job.Namespace
		}
		if b.Job.Name != "" {
			name = b.Job.Name
		}
	}
	return namespace, name
}

// RebuildPending says a rebuild was asked for and MCO has not yet cleared it.
func RebuildPending(mosc *mcfgv1.MachineOSConfig) bool {
	return metav1.HasAnnotation(mosc.ObjectMeta, RebuildAnnotation)
}

// Condition is mosb's condition of type t, or nil.
func Condition(mosb *mcfgv1.MachineOSBuild, t mcfgv1.BuildProgress) *metav1.Condition {
	for i := range mosb.Status.Conditions {
		if mosb.Status.Conditions[i].Type == string(t) {
			return &mosb.Status.Conditions[i]
		}
	}
	return nil
}

// Why says why a build that ended without an image did: the reason and message of its
// True Failed or Interrupted condition; "" for any other build.
func Why(mosb *mcfgv1.MachineOSBuild) string {
	for _, t := range []mcfgv1.BuildProgress{mcfgv1.MachineOSBuildFailed, mcfgv1.MachineOSBuildInterrupted} {
		if c := Condition(mosb, t); c != nil && c.Status == metav1.ConditionTrue {
			switch {
			case c.Reason != "" && c.Message != "":
				return c.Reason + ": " + c.Message
			case c.Message != "":
				return c.Message
			}
			return c.Reason
		}
	}
	return ""
}
