package bootimage

import (
	"bytes"
	"encoding/json"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Options describe the cluster a MachineSet belongs to.
type Options struct {
	// Platform is the cluster's infrastructure platform; boot images are managed on
	// AWS, GCP, Azure and vSphere.
	Platform configv1.PlatformType
	// DefaultArch is the architecture (x86_64, aarch64, ...) of MachineSets that do
	// not name one (see Arch): the control plane's on a single-architecture cluster,
	// "" on a multi-architecture one.
	DefaultArch string
	// NoArch says why DefaultArch is "" (see ClusterArch), for the skip.
	NoArch string
	// VSphereTemplates finds templates in vCenter; nil where vCenter is out of reach,
	// which skips every vSphere MachineSet (see reconcileVSphere).
	VSphereTemplates VSphereTemplates
	// IsRHCOSAMI tells a Red Hat CoreOS AMI, which may be replaced, from a custom one,
	// which must not. MCO checks the AMI against the installer's list of published
	// AMIs, or asks EC2 for the AMI's owner; that needs the cloud, so the controller
	// supplies it. nil treats every AMI given by ID as replaceable.
	IsRHCOSAMI func(id string) bool
}

// Outcome is what Reconcile decided for a MachineSet.
type Outcome string

// Outcomes of Reconcile.
const (
	// Patch: the MachineSet boots an older image; apply Result.Patch.
	Patch Outcome = "Patch"
	// UpToDate: the MachineSet already boots the target image.
	UpToDate Outcome = "UpToDate"
	// Skipped: the MachineSet is left alone; Result.Skip says why.
	Skipped Outcome = "Skip"
)

// Result is the decision for one MachineSet.
type Result struct {
	MachineSet string
	Outcome    Outcome
	// Skip says why, when Outcome is Skipped.
	Skip Skip
	// Arch is the architecture whose image was looked up.
	Arch string
	// Current is the image the MachineSet boots (on GCP, that of its first boot disk
	// that differs from Target, or of its first boot disk); Target the image it
	// should boot.
	Current, Target string
	// Patch, when Outcome is Patch, is the JSON merge patch (content type
	// application/merge-patch+json) to apply to the MachineSet. It changes the image
	// fields and nothing else in providerSpec.value. ProviderSpec is the whole new
	// providerSpec.value.
	Patch        []byte
	ProviderSpec []byte
	// UserDataSecret is the secret in MachineAPINamespace holding the MachineSet's
	// Ignition stub. As MCO does, upgrade it with UpgradeStub before applying Patch:
	// a new boot image may not read spec 2.
	UserDataSecret string
}

// Reconcile compares a MachineSet's boot image with the target in stream, as MCO's
// checkMachineSet does for its platform (see reconcileAWS, reconcileGCP,
// reconcileAzure and reconcileVSphere for the rules). A MachineSet that must be left alone is an Outcome Skipped result, not an
// error; errors are for data that cannot be read (a providerSpec, the stream
// metadata), and name the MachineSet and the field.
func Reconcile(ms *machinev1beta1.MachineSet, stream *Stream, opts Options) (Result, error) {
	r := Result{MachineSet: ms.Name}
	if sk, skip := ineligible(ms); skip {
		return r.skipped(sk.Reason, sk.Message), nil
	}
	switch opts.Platform {
	case configv1.AWSPlatformType, configv1.GCPPlatformType, configv1.AzurePlatformType, configv1.VSpherePlatformType:
	default:
		return r.skipped(SkipUnsupportedPlatform, fmt.Sprintf("boot images are managed on AWS, GCP, Azure and vSphere, not on platform %q", opts.Platform)), nil
	}
	arch, err := Arch(ms, opts.DefaultArch)
	if err != nil {
		return Result{}, err
	}
	if arch == "" {
		return r.skipped(SkipNoArchitecture, noArchMessage(opts)), nil
	}
	r.Arch = arch
	value, err := providerSpecValue(ms)
	if err != nil {
		return Result{}, err
	}
	switch opts.Platform {
	case configv1.AWSPlatformType:
		err = r.reconcileAWS(ms, value, stream, opts)
	case configv1.GCPPlatformType:
		err = r.reconcileGCP(ms, value, stream)
	case configv1.AzurePlatformType:
		err = r.reconcileAzure(ms, value, stream)
	default:
		err = r.reconcileVSphere(ms, value, stream, opts)
	}
	if err != nil {
		return Result{}, fmt.Errorf("machineset %s: %w", ms.Name, err)
	}
	return r, nil
}

// noArchMessage says why a machine resource without an architecture is skipped.
func noArchMessage(opts Options) string {
	why := opts.NoArch
	if why == "" {
		why = "the cluster's architecture is unknown"
	}
	return fmt.Sprintf("no %s annotation with kubernetes.io/arch, and %s; add kubernetes.io/arch=<amd64|arm64|ppc64le|s390x> to the annotation", ArchAnnotation, why)
}

func (r Result) skipped(reason SkipReason, message string) Result {
	r.Outcome = Skipped
	r.Skip = Skip{MachineSet: r.MachineSet, Reason: reason, Message: message}
	return r
}

func (r *Result) skip(reason SkipReason, message string) {
	*r = r.skipped(reason, message)
}

// providerSpecValue is providerSpec.value as generic JSON, numbers kept as written, so
// that a patch changes only what it means to.
func providerSpecValue(ms *machinev1beta1.MachineSet) (map[string]any, error) {
	v := ms.Spec.Template.Spec.ProviderSpec.Value
	if v == nil || len(bytes.TrimSpace(v.Raw)) == 0 {
		return nil, fmt.Errorf("machineset %s: spec.template.spec.providerSpec.value is empty", ms.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(v.Raw))
	dec.UseNumber()
	var value map[string]any
	if err := dec.Decode(&value); err != nil {
		return nil, fmt.Errorf("machineset %s: spec.template.spec.providerSpec.value: %v", ms.Name, err)
	}
	return value, nil
}

// decodeProviderSpec reads providerSpec.value into its typed form, checking its kind
// when it names one.
func decodeProviderSpec(ms *machinev1beta1.MachineSet, kind string, into any) error {
	raw := ms.Spec.Template.Spec.ProviderSpec.Value.Raw
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err == nil && meta.Kind != "" && meta.Kind != kind {
		return fmt.Errorf("spec.template.spec.providerSpec.value is a %s, not the %s this platform needs", meta.Kind, kind)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("spec.template.spec.providerSpec.value is not a valid %s: %v", kind, err)
	}
	return nil
}

// patch records the change from old to new providerSpec.value.
func (r *Result) patch(old, new map[string]any) error {
	spec, err := json.Marshal(new)
	if err != nil {
		return fmt.Errorf("encoding the new providerSpec.value: %v", err)
	}
	p, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"providerSpec": map[string]any{"value": mergePatch(old, new)},
	}}}})
	if err != nil {
		return fmt.Errorf("encoding the patch: %v", err)
	}
	r.Outcome, r.ProviderSpec, r.Patch = Patch, spec, p
	return nil
}
