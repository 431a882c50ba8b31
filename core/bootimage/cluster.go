package bootimage

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
)

// ClusterInputs are what a boot image sync reads of the cluster.
type ClusterInputs struct {
	// Configuration is MachineConfiguration/cluster, or nil when it does not exist
	// (then every MachineSet gets the platform's default mode).
	Configuration *operatorv1.MachineConfiguration
	// MachineSets are the Machine API MachineSets of MachineAPINamespace.
	MachineSets []*machinev1beta1.MachineSet
	// ConfigMap is the coreos-bootimages ConfigMap, or nil when it does not exist.
	ConfigMap *corev1.ConfigMap
	// ControlPlaneMachineSets are those of MachineAPINamespace (MCO's
	// ManagedBootImagesCPMS), none where the cluster serves none.
	ControlPlaneMachineSets []*machinev1.ControlPlaneMachineSet
	// Nodes give the cluster's default architecture (see DefaultArch).
	Nodes []*corev1.Node
	// Platform overrides InferPlatform when set.
	Platform configv1.PlatformType
	// InstallVersion is the OCP version the cluster was installed with (ClusterVersion's
	// oldest completed update), "" where there is no ClusterVersion; the skew status
	// starts from it.
	InstallVersion string
}

// ClusterReport is what a boot image sync does, or would do: the dry run of Check (the
// selection, the decisions for the selected MachineSets by name, the failures worded
// as MCO's Degraded message words them) and the status the controller writes with it.
type ClusterReport struct {
	Report
	// Platform is the platform whose default mode applies.
	Platform configv1.PlatformType
	// Managers are MachineConfiguration/cluster's machine managers with the
	// platform's default added (EffectiveManagers): the status to write.
	Managers []operatorv1.MachineManager
	// Skew is status.bootImageSkewEnforcementStatus as this sync leaves it, and
	// SkewCheck its version against the limit. SkewIncomplete says the sync did not
	// finish cleanly, so that an Automatic record is not checked yet.
	Skew           operatorv1.BootImageSkewEnforcementStatus
	SkewCheck      Skew
	SkewIncomplete bool
	// CPMS is the check of the ControlPlaneMachineSets (CheckCPMS).
	CPMS CPMSReport
}

// FinishSkew derives the skew status for a sync whose counts are stats, as MCO's
// operator and boot image controller do together (SkewStatus, then
// RecordSync), and checks it.
func (r *ClusterReport) FinishSkew(in ClusterInputs, stats Stats) {
	var spec operatorv1.BootImageSkewEnforcementConfig
	var previous operatorv1.BootImageSkewEnforcementStatus
	if in.Configuration != nil {
		spec, previous = in.Configuration.Spec.BootImageSkewEnforcement, in.Configuration.Status.BootImageSkewEnforcementStatus
	}
	release := ""
	if in.ConfigMap != nil {
		release = in.ConfigMap.Data[ReleaseVersionKey]
	}
	// The schema refuses an Automatic status unless the spec's machine managers, when
	// it has any, enroll every Machine API MachineSet too: judge by the spec's then.
	managers := r.Managers
	if in.Configuration != nil && len(in.Configuration.Spec.ManagedBootImages.MachineManagers) > 0 {
		managers = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	r.Skew = SkewStatus(spec, previous, r.Platform, managers, in.InstallVersion)
	r.Skew = RecordSync(r.Skew, stats, release, in.InstallVersion)
	r.SkewCheck = CheckSkew(r.Skew)
	r.SkewIncomplete = stats.Errored > 0 || !stats.Finished()
	// Name the MachineSets that keep the record at the install version, and why
	// (for vSphere: the OVA upload mcotui cannot do), in the condition itself.
	if r.Skew.Mode == operatorv1.BootImageSkewEnforcementModeStatusAutomatic {
		var left []Skip
		for _, sk := range stats.Skipped {
			if sk.Reason.LeavesSkew() {
				left = append(left, sk)
			}
		}
		if len(left) > 0 {
			r.SkewCheck.Message += ". The boot image version is the install version because MachineSets were left alone: " + Summary(left)
		}
	}
}

// CheckCluster is the boot image check of a whole cluster, what the controller carries
// out and `mcotui bootimages` prints: it selects the MachineSets the machine managers enroll and decides each
// one's boot image against the coreos-bootimages stream, without changing anything:
// what the controller carries out and `mcotui bootimages` prints. Each MachineSet is
// reconciled for the platform its providerSpec names. The error is the selection's (an
// invalid mode or selector in MachineConfiguration/cluster); a missing or unreadable
// stream is an error of each selected MachineSet.
func CheckCluster(in ClusterInputs) (ClusterReport, error) {
	platform := ClusterPlatform(in.Platform, in.MachineSets)
	var spec []operatorv1.MachineManager
	if in.Configuration != nil {
		spec = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	rep := ClusterReport{Platform: platform, Managers: EffectiveManagers(platform, spec)}
	var stream *Stream
	var streamErr error
	if in.ConfigMap == nil {
		streamErr = fmt.Errorf("configmap %s/%s not found: it holds the target boot images (CoreOS stream metadata under key %q)", ConfigMapNamespace, ConfigMapName, StreamKey)
	} else {
		stream, streamErr = StreamFromConfigMap(in.ConfigMap)
	}
	arch, noArch := ClusterArch(in.Nodes)
	rep.CPMS = CheckCPMS(spec, in.ControlPlaneMachineSets, stream, streamErr, Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	// No vCenter lookup: mcotui does not reach vCenter, so vSphere MachineSets are
	// skipped saying what to upload (see VSphereTemplates).
	var err error
	rep.Report, err = Check(spec, in.MachineSets, stream, streamErr, Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	if err != nil {
		rep.FinishSkew(in, Stats{Errored: 1, Total: 1})
		return rep, err
	}
	rep.FinishSkew(in, rep.Stats())
	return rep, nil
}
