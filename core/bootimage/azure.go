package bootimage

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Azure marketplace variants, as MCO names them: which offering of
// rhel-coreos-extensions.marketplace.azure a MachineSet's image comes from.
const (
	azureNoPlan  = "MarketplaceNoPlan"
	azureOCP     = "MarketplaceWithPlan-OCP"
	azureOPP     = "MarketplaceWithPlan-OPP"
	azureOKE     = "MarketplaceWithPlan-OKE"
	azureOCPEMEA = "MarketplaceWithPlan-OCPEMEA"
	azureOPPEMEA = "MarketplaceWithPlan-OPPEMEA"
	azureOKEEMEA = "MarketplaceWithPlan-OKEEMEA"
)

// azureUnpaidPublisher publishes the unpaid marketplace images installers (and ARO) use.
const azureUnpaidPublisher = "azureopenshift"

// azurePaidVariants are the paid offerings by publisher and offer; redhat-limited
// publishes the EMEA ones.
var azurePaidVariants = map[[2]string]string{
	{"redhat", "rh-ocp-worker"}:         azureOCP,
	{"redhat", "rh-opp-worker"}:         azureOPP,
	{"redhat", "rh-oke-worker"}:         azureOKE,
	{"redhat-limited", "rh-ocp-worker"}: azureOCPEMEA,
	{"redhat-limited", "rh-opp-worker"}: azureOPPEMEA,
	{"redhat-limited", "rh-oke-worker"}: azureOKEEMEA,
}

// reconcileAzure follows MCO's reconcileAzureProviderSpec:
//   - ppc64le and s390x MachineSets, and those with a securityProfile.settings.securityType
//     (trusted launch, confidential VMs), are skipped;
//   - an image given by resourceID (uploaded at install time) moves to the unpaid
//     marketplace image; a marketplace image keeps its offering (publisher azureopenshift:
//     unpaid; redhat or redhat-limited with offer rh-ocp/opp/oke-worker: that paid one); any
//     other image is an error, since MCO cannot tell which offering it is;
//   - a stream without Azure marketplace images (OKD) skips the MachineSet;
//   - the Hyper-V generation is kept: gen2 in the resourceID of an uploaded image, v2 in
//     the SKU of an unpaid one (always 2 on aarch64), no gen1 in the SKU of a paid one;
//   - the whole image becomes the stream's {publisher, offer, sku, version} with
//     resourceID "" and type MarketplaceNoPlan (MarketplaceWithPlan for paid ones).
func (r *Result) reconcileAzure(ms *machinev1beta1.MachineSet, value map[string]any, stream *Stream) error {
	var spec machinev1beta1.AzureMachineProviderSpec
	if err := decodeProviderSpec(ms, "AzureMachineProviderSpec", &spec); err != nil {
		return err
	}
	if spec.UserDataSecret != nil {
		// Azure's reference carries a namespace; MCO reads the secret from
		// openshift-machine-api whatever it says, as the installer puts it there.
		r.UserDataSecret = spec.UserDataSecret.Name
	}
	if r.Arch == "ppc64le" || r.Arch == "s390x" {
		r.skip(SkipUnsupportedArch, fmt.Sprintf("Azure boot images are not updated for %s", r.Arch))
		return nil
	}
	if sp := spec.SecurityProfile; sp != nil && sp.Settings.SecurityType != "" {
		r.skip(SkipSecurityType, fmt.Sprintf("providerSpec.value.securityProfile.settings.securityType is %s; MachineSets with a security type are not updated on Azure", sp.Settings.SecurityType))
		return nil
	}
	current := spec.Image
	r.Current = azureImageName(current)
	uploaded := current.ResourceID != ""
	variant := ""
	switch {
	case uploaded || current.Publisher == azureUnpaidPublisher:
		variant = azureNoPlan
	default:
		variant = azurePaidVariants[[2]string{current.Publisher, current.Offer}]
	}
	if variant == "" {
		return fmt.Errorf("could not determine azure marketplace variant, cannot update boot images: providerSpec.value.image has publisher %q and offer %q, neither %s nor a Red Hat paid offering (redhat or redhat-limited, rh-ocp-worker, rh-opp-worker or rh-oke-worker), and no resourceID",
			current.Publisher, current.Offer, azureUnpaidPublisher)
	}
	market, err := stream.AzureMarketplace(r.Arch)
	if err != nil {
		return err
	}
	if market == nil {
		r.skip(SkipNoMarketplace, fmt.Sprintf("the stream metadata has no Azure marketplace images for %s (architectures.%s.rhel-coreos-extensions.marketplace.azure), as OKD's have none", r.Arch, r.Arch))
		return nil
	}
	var gen2 bool
	switch {
	case uploaded:
		gen2 = strings.Contains(current.ResourceID, "gen2")
	case current.Type == machinev1beta1.AzureImageTypeMarketplaceNoPlan:
		gen2 = strings.Contains(current.SKU, "v2") || r.Arch == "aarch64"
	default:
		gen2 = !strings.Contains(current.SKU, "gen1")
	}
	target, err := azureTarget(stream, market, variant, gen2, r.Arch)
	if err != nil {
		return err
	}
	r.Target = azureImageName(target)
	if reflect.DeepEqual(current, target) {
		r.Outcome = UpToDate
		return nil
	}
	next := maps.Clone(value)
	next["image"] = map[string]any{
		"publisher": target.Publisher, "offer": target.Offer, "sku": target.SKU, "version": target.Version,
		"resourceID": target.ResourceID, "type": string(target.Type),
	}
	return r.patch(value, next)
}

// azureTarget picks the stream's image of variant and Hyper-V generation, as MCO's
// getTargetImageFromStream does.
func azureTarget(stream *Stream, m *AzureMarketplace, variant string, gen2 bool, arch string) (machinev1beta1.Image, error) {
	sets := map[string]*AzureMarketplaceImages{
		azureNoPlan: m.NoPurchasePlan, azureOCP: m.OCP, azureOPP: m.OPP, azureOKE: m.OKE,
		azureOCPEMEA: m.OCPEMEA, azureOPPEMEA: m.OPPEMEA, azureOKEEMEA: m.OKEEMEA,
	}
	set := sets[variant]
	if set == nil {
		return machinev1beta1.Image{}, stream.errorf("architectures.%s.rhel-coreos-extensions.marketplace.azure: no Azure marketplace images available for variant %s", arch, variant)
	}
	img, gen := set.Gen1, "Gen1"
	if gen2 {
		img, gen = set.Gen2, "Gen2"
	}
	if img == nil {
		return machinev1beta1.Image{}, stream.errorf("architectures.%s.rhel-coreos-extensions.marketplace.azure: no %s Azure marketplace image available for architecture %s (variant %s)", arch, gen, arch, variant)
	}
	out := machinev1beta1.Image{
		Publisher: img.Publisher, Offer: img.Offer, SKU: img.SKU, Version: img.Version,
		Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan,
	}
	if variant != azureNoPlan {
		out.Type = machinev1beta1.AzureImageTypeMarketplaceWithPlan
	}
	return out, nil
}

// azureImageName is an image as people read it: its resource ID, or the marketplace
// URN publisher:offer:sku:version.
func azureImageName(img machinev1beta1.Image) string {
	if img.ResourceID != "" {
		return img.ResourceID
	}
	return fmt.Sprintf("%s:%s:%s:%s", img.Publisher, img.Offer, img.SKU, img.Version)
}
