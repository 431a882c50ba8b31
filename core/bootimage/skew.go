package bootimage

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sversion "k8s.io/apimachinery/pkg/util/version"
)

// The boot image skew limits of the release MCO's constants name
// (RHCOSVersionBootImageSkewLimit, OCPVersionBootImageSkewLimit): a cluster whose
// oldest boot image is older than these may not scale up, since a new release may not
// pivot from it.
const (
	SkewLimitOCP   = "4.13.0"
	SkewLimitRHCOS = "9.2"
)

// ReleaseVersionKey of the coreos-bootimages ConfigMap is the OCP release its stream
// belongs to; MCO records it as the cluster's boot image version once every MachineSet
// boots the stream's image.
const ReleaseVersionKey = "releaseVersion"

// unknownVersion is what MCO records when it cannot tell the install version: the
// oldest, so that the check errs on the side of reporting skew.
const unknownVersion = "0.0.0"

// ConditionSkew is the condition mcotui writes on MachineConfiguration/cluster about
// boot image skew: True when the cluster's boot image version is below the limit. MCO
// says the same by setting its ClusterOperator Upgradeable=False; a cluster without MCO
// has no ClusterOperator, and mcotui does not block upgrades.
const ConditionSkew = "BootImageSkewLimitExceeded"

// Reasons of ConditionSkew.
const (
	ReasonSkewExceeded       = "SkewLimitExceeded"
	ReasonSkewWithinLimit    = "WithinSkewLimit"
	ReasonSkewNotEnforced    = "SkewEnforcementNone"
	ReasonSkewSyncIncomplete = "BootImageUpdateIncomplete"
)

// SupportsUpdates says whether boot images are updated automatically on platform, as
// MCO's CheckBootImagePlatform does: on AWS, GCP, Azure and vSphere.
func SupportsUpdates(platform configv1.PlatformType) bool {
	switch platform {
	case configv1.AWSPlatformType, configv1.GCPPlatformType, configv1.AzurePlatformType, configv1.VSpherePlatformType:
		return true
	}
	return false
}

// SkewStatus is status.bootImageSkewEnforcementStatus for spec.bootImageSkewEnforcement,
// as MCO's operator derives it (syncBootImageSkewEnforcementStatus): Manual with the
// spec's versions, or None, when the spec names a mode; otherwise Automatic on a platform
// whose boot images are updated (SupportsUpdates) when managers (the effective ones, see
// EffectiveManagers) enroll every Machine API MachineSet, keeping the version previous
// recorded, or else the install version; Manual with the install version otherwise.
// installVersion is the OCP version the cluster was installed with (ClusterVersion's
// oldest completed update), "" when unknown, which records 0.0.0 as MCO does.
func SkewStatus(spec operatorv1.BootImageSkewEnforcementConfig, previous operatorv1.BootImageSkewEnforcementStatus, platform configv1.PlatformType, managers []operatorv1.MachineManager, installVersion string) operatorv1.BootImageSkewEnforcementStatus {
	switch spec.Mode {
	case operatorv1.BootImageSkewEnforcementConfigModeManual:
		return operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual, Manual: spec.Manual}
	case operatorv1.BootImageSkewEnforcementConfigModeNone:
		return operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusNone}
	}
	install := normalVersion(installVersion)
	all := slices.ContainsFunc(managers, func(m operatorv1.MachineManager) bool {
		return isMAPIMachineSets(m) && m.Selection.Mode == operatorv1.All
	})
	if SupportsUpdates(platform) && all {
		if previous.Mode == operatorv1.BootImageSkewEnforcementModeStatusAutomatic && previous.Automatic != (operatorv1.ClusterBootImageAutomatic{}) {
			return previous
		}
		return operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic,
			Automatic: operatorv1.ClusterBootImageAutomatic{OCPVersion: install}}
	}
	return operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual,
		Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: install}}
}

// RecordSync updates an Automatic status after a sync of the Machine API MachineSets, as
// MCO's boot image controller does: when every MachineSet was dealt with without an
// error and none was skipped in a way that may leave an old image (SkipReason.LeavesSkew),
// the cluster boots the stream's release, releaseVersion (the ConfigMap's
// ReleaseVersionKey; nothing changes when it is empty or not a version); when some were
// skipped so, the record falls back to the install version, the oldest the cluster can
// be sure of. A sync with errors changes nothing: the Degraded condition says why. Other
// modes are returned unchanged.
func RecordSync(status operatorv1.BootImageSkewEnforcementStatus, mapi Stats, releaseVersion, installVersion string) operatorv1.BootImageSkewEnforcementStatus {
	if status.Mode != operatorv1.BootImageSkewEnforcementModeStatusAutomatic || mapi.Errored > 0 || !mapi.Finished() {
		return status
	}
	if slices.ContainsFunc(mapi.Skipped, func(s Skip) bool { return s.Reason.LeavesSkew() }) {
		status.Automatic = operatorv1.ClusterBootImageAutomatic{OCPVersion: normalVersion(installVersion)}
		return status
	}
	v, err := k8sversion.ParseGeneric(releaseVersion)
	if err != nil {
		return status
	}
	status.Automatic = operatorv1.ClusterBootImageAutomatic{OCPVersion: fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch())}
	return status
}

// normalVersion is v as x.y.z, the form the API accepts, or 0.0.0.
func normalVersion(v string) string {
	p, err := k8sversion.ParseGeneric(v)
	if err != nil {
		return unknownVersion
	}
	return fmt.Sprintf("%d.%d.%d", p.Major(), p.Minor(), p.Patch())
}

// Skew is the cluster's boot image version against the limit.
type Skew struct {
	Mode operatorv1.BootImageSkewEnforcementModeStatus
	// OCPVersion or RHCOSVersion is the cluster's boot image version the status
	// records (OCPVersion is used when both are); Limit the limit it is compared with.
	OCPVersion, RHCOSVersion string
	Limit                    string
	// Exceeded says the version is below the limit; Message says so, where the
	// version comes from and what to do, or why the version is not checked. Reason
	// is Message's first clause alone: the comparison, for narrow displays.
	Exceeded bool
	Message  string
	Reason   string
}

// Version is the version compared: "OCP 4.12.0" or "RHCOS 9.0.20220101-0".
func (s Skew) Version() string {
	switch {
	case s.OCPVersion != "":
		return "OCP " + s.OCPVersion
	case s.RHCOSVersion != "":
		return "RHCOS " + s.RHCOSVersion
	}
	return ""
}

// CheckSkew compares the version status records with the limits, as MCO's
// checkBootImageSkew does: the OCP version against SkewLimitOCP when there is one, else
// the RHCOS version's RHEL major.minor against SkewLimitRHCOS (in the legacy form
// 48.84.202208021106-0 the RHEL version is the second number's digits, 8.4). Mode None
// checks nothing; a version that does not parse is not reported as skew, as in MCO, but
// said in the message.
func CheckSkew(status operatorv1.BootImageSkewEnforcementStatus) Skew {
	s := Skew{Mode: status.Mode}
	switch status.Mode {
	case operatorv1.BootImageSkewEnforcementModeStatusAutomatic:
		s.OCPVersion, s.RHCOSVersion = status.Automatic.OCPVersion, status.Automatic.RHCOSVersion
	case operatorv1.BootImageSkewEnforcementModeStatusManual:
		s.OCPVersion, s.RHCOSVersion = status.Manual.OCPVersion, status.Manual.RHCOSVersion
	case operatorv1.BootImageSkewEnforcementModeStatusNone:
		s.Message = "boot image skew is not checked (spec.bootImageSkewEnforcement.mode None); new machines may boot an image too old for the release"
		s.Reason = s.Message
		return s
	default:
		s.Message = "boot image skew enforcement has no mode yet"
		s.Reason = s.Message
		return s
	}
	switch {
	case s.OCPVersion != "":
		s.Limit = SkewLimitOCP
		s.Exceeded, s.Message = checkOCPSkew(s.OCPVersion)
	case s.RHCOSVersion != "":
		s.Limit = SkewLimitRHCOS
		s.Exceeded, s.Message = checkRHCOSSkew(s.RHCOSVersion)
	default:
		s.Message = "no boot image version is recorded"
	}
	s.Reason = s.Message
	if s.Exceeded {
		where := "status.bootImageSkewEnforcementStatus.automatic (recorded by boot image updates)"
		fix := "let every MachineSet's boot image be updated, or set spec.bootImageSkewEnforcement"
		if status.Mode == operatorv1.BootImageSkewEnforcementModeStatusManual {
			where = "spec.bootImageSkewEnforcement.manual, or the install version when the spec names no mode"
			fix = "update the boot images and record the oldest one's version in spec.bootImageSkewEnforcement.manual, or set its mode None"
		}
		if s.OCPVersion == unknownVersion {
			s.Message += " (0.0.0: the install version is unknown and no boot image update has been recorded)"
		}
		s.Message = fmt.Sprintf("%s, as %s says; %s", s.Message, where, fix)
	}
	return s
}

func checkOCPSkew(version string) (bool, string) {
	v, err := k8sversion.ParseGeneric(version)
	if err != nil {
		return false, fmt.Sprintf("OCP boot image version %q does not parse: %v", version, err)
	}
	if v.LessThan(k8sversion.MustParseGeneric(SkewLimitOCP)) {
		return true, fmt.Sprintf("the cluster is using OCP boot image version %s, which is below the minimum required version %s", version, SkewLimitOCP)
	}
	return false, fmt.Sprintf("OCP boot image version %s is within the limit %s", version, SkewLimitOCP)
}

func checkRHCOSSkew(version string) (bool, string) {
	parts := strings.Split(version, ".")
	if len(parts) < 3 {
		return false, fmt.Sprintf("RHCOS boot image version %q does not parse: expected at least 3 parts", version)
	}
	major, minor := parts[0], parts[1]
	stamp, _, _ := strings.Cut(parts[2], "-")
	var rhel string
	switch {
	case len(stamp) == 8:
		rhel = major + "." + minor
	case len(stamp) == 12 && len(minor) >= 2:
		rhel = minor[:1] + "." + minor[1:]
	default:
		return false, fmt.Sprintf("RHCOS boot image version %q does not parse: its third part is neither a date (YYYYMMDD) nor a timestamp (YYYYMMDDHHmm)", version)
	}
	v, err := k8sversion.ParseGeneric(rhel)
	if err != nil {
		return false, fmt.Sprintf("RHCOS boot image version %q does not parse (RHEL version %q): %v", version, rhel, err)
	}
	if v.LessThan(k8sversion.MustParseGeneric(SkewLimitRHCOS)) {
		return true, fmt.Sprintf("the cluster is using RHCOS boot image version %s(RHEL version: %s), which is below the minimum required RHEL version %s", version, rhel, SkewLimitRHCOS)
	}
	return false, fmt.Sprintf("RHCOS boot image version %s (RHEL %s) is within the limit %s", version, rhel, SkewLimitRHCOS)
}

// SetSkewCondition returns conds with ConditionSkew set from skew. incomplete says the
// boot image sync has not finished cleanly, so that an Automatic record is not yet to be
// trusted (MCO's checkBootImageControllerReady): then the condition is Unknown. Other
// conditions are kept; conds is not modified.
func SetSkewCondition(conds []metav1.Condition, skew Skew, incomplete bool, now metav1.Time) []metav1.Condition {
	out := slices.Clone(conds)
	c := metav1.Condition{Type: ConditionSkew, LastTransitionTime: now, Message: skew.Message}
	switch {
	case skew.Mode == operatorv1.BootImageSkewEnforcementModeStatusNone:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonSkewNotEnforced
	case skew.Mode == operatorv1.BootImageSkewEnforcementModeStatusAutomatic && incomplete:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonSkewSyncIncomplete
		c.Message = "the boot image update has not finished without errors (see BootImageUpdateDegraded), so the recorded version " + skew.Version() + " is not checked yet"
	case skew.Exceeded:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonSkewExceeded
	default:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonSkewWithinLimit
	}
	meta.SetStatusCondition(&out, c)
	return out
}
