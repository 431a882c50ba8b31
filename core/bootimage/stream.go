package bootimage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// StreamKey is the key of the coreos-bootimages ConfigMap that holds the CoreOS stream
// metadata of the release.
const StreamKey = "stream"

// ErrNoRegionImage is wrapped by AWSImage when the stream has no AMI for the region.
// MCO skips such a MachineSet instead of failing.
var ErrNoRegionImage = errors.New("no AMI for the region")

// Stream is the part of CoreOS stream metadata (github.com/coreos/stream-metadata-go)
// that names cloud boot images.
type Stream struct {
	// Name is the stream's name, such as rhcos-4.18.
	Name          string                `json:"stream"`
	Architectures map[string]StreamArch `json:"architectures"`
}

// StreamArch is one architecture of a stream, by RPM name (x86_64, aarch64, ...).
type StreamArch struct {
	// Artifacts are the downloadable disk images by platform (vmware holds the OVA
	// vSphere templates are made from).
	Artifacts map[string]StreamArtifacts `json:"artifacts"`
	Images    StreamImages               `json:"images"`
	// Extensions hold what only RHCOS publishes: the Azure marketplace images.
	Extensions *StreamExtensions `json:"rhel-coreos-extensions,omitempty"`
}

// StreamArtifacts are one platform's artifacts: the RHCOS release they were built
// from and their files by format (ova, vmdk.gz, ...).
type StreamArtifacts struct {
	Release string                  `json:"release"`
	Formats map[string]StreamFormat `json:"formats"`
}

// StreamFormat is one format of an artifact.
type StreamFormat struct {
	Disk *StreamFile `json:"disk,omitempty"`
}

// StreamFile is a downloadable file.
type StreamFile struct {
	Location string `json:"location"`
	SHA256   string `json:"sha256"`
}

// StreamExtensions is stream metadata's rhel-coreos-extensions.
type StreamExtensions struct {
	Marketplace *StreamMarketplace `json:"marketplace,omitempty"`
}

// StreamMarketplace is rhel-coreos-extensions.marketplace.
type StreamMarketplace struct {
	Azure *AzureMarketplace `json:"azure,omitempty"`
}

// AzureMarketplace are the Azure marketplace images of an architecture, by offering:
// the unpaid one installers use, and the paid OCP, OPP and OKE ones, each also
// published for EMEA under another publisher.
type AzureMarketplace struct {
	NoPurchasePlan *AzureMarketplaceImages `json:"no-purchase-plan,omitempty"`
	OCP            *AzureMarketplaceImages `json:"ocp,omitempty"`
	OPP            *AzureMarketplaceImages `json:"opp,omitempty"`
	OKE            *AzureMarketplaceImages `json:"oke,omitempty"`
	OCPEMEA        *AzureMarketplaceImages `json:"ocp-emea,omitempty"`
	OPPEMEA        *AzureMarketplaceImages `json:"opp-emea,omitempty"`
	OKEEMEA        *AzureMarketplaceImages `json:"oke-emea,omitempty"`
}

// AzureMarketplaceImages are one offering's images for Hyper-V generations 1 and 2.
type AzureMarketplaceImages struct {
	Gen1 *AzureMarketplaceImage `json:"hyperVGen1,omitempty"`
	Gen2 *AzureMarketplaceImage `json:"hyperVGen2,omitempty"`
}

// AzureMarketplaceImage names a marketplace image.
type AzureMarketplaceImage struct {
	Publisher string `json:"publisher"`
	Offer     string `json:"offer"`
	SKU       string `json:"sku"`
	Version   string `json:"version"`
}

// StreamImages are an architecture's cloud images.
type StreamImages struct {
	AWS *AWSImages `json:"aws,omitempty"`
	GCP *GCPImage  `json:"gcp,omitempty"`
}

// AWSImages are the AMIs of an architecture, by region.
type AWSImages struct {
	Regions map[string]AWSRegionImage `json:"regions"`
}

// AWSRegionImage is the AMI of one region.
type AWSRegionImage struct {
	Release string `json:"release"`
	Image   string `json:"image"`
}

// GCPImage is the GCP image of an architecture.
type GCPImage struct {
	Release string `json:"release"`
	Project string `json:"project"`
	Name    string `json:"name"`
}

// StreamFromConfigMap parses the stream metadata of the coreos-bootimages ConfigMap.
// Errors name the ConfigMap, the key and what is wrong in it.
func StreamFromConfigMap(cm *corev1.ConfigMap) (*Stream, error) {
	where := fmt.Sprintf("configmap %s/%s", cm.Namespace, cm.Name)
	raw, ok := cm.Data[StreamKey]
	if !ok {
		return nil, fmt.Errorf("%s has no %q key; the machine-config operator writes the release's CoreOS stream metadata there", where, StreamKey)
	}
	s, err := ParseStream([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("%s key %q: %w", where, StreamKey, err)
	}
	return s, nil
}

// ParseStream parses CoreOS stream metadata JSON. Images are checked when they are
// looked up, so that a gap in one platform or architecture does not stop the others.
func ParseStream(raw []byte) (*Stream, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("no CoreOS stream metadata: the value is empty")
	}
	var s Stream
	if err := json.Unmarshal(raw, &s); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("not CoreOS stream metadata: invalid JSON at byte %d: %v", syn.Offset, err)
		}
		return nil, fmt.Errorf("not CoreOS stream metadata: %v", err)
	}
	if len(s.Architectures) == 0 {
		return nil, errors.New("CoreOS stream metadata has no architectures")
	}
	return &s, nil
}

// AWSImage returns the AMI of arch in region. The error names the missing or empty
// field; it wraps ErrNoRegionImage when only the region is missing.
func (s *Stream) AWSImage(arch, region string) (string, error) {
	a, err := s.arch(arch)
	if err != nil {
		return "", err
	}
	path := fmt.Sprintf("architectures.%s.images.aws", arch)
	if a.Images.AWS == nil || len(a.Images.AWS.Regions) == 0 {
		return "", s.errorf("%s: no AWS images", path)
	}
	if region == "" {
		return "", s.errorf("%s: no region to look up (providerSpec.value.placement.region is empty)", path)
	}
	img, ok := a.Images.AWS.Regions[region]
	if !ok {
		return "", s.errorf("%s.regions: no region %s (%w; the stream covers %s)", path, region, ErrNoRegionImage, keys(a.Images.AWS.Regions))
	}
	if img.Image == "" {
		return "", s.errorf("%s.regions.%s.image is empty", path, region)
	}
	return img.Image, nil
}

// GCPImage returns the GCP image of arch as a MachineSet names it:
// projects/<project>/global/images/<name>, the form the installer writes.
func (s *Stream) GCPImage(arch string) (string, error) {
	a, err := s.arch(arch)
	if err != nil {
		return "", err
	}
	path := fmt.Sprintf("architectures.%s.images.gcp", arch)
	g := a.Images.GCP
	switch {
	case g == nil:
		return "", s.errorf("%s: no GCP image", path)
	case g.Project == "":
		return "", s.errorf("%s.project is empty", path)
	case g.Name == "":
		return "", s.errorf("%s.name is empty", path)
	}
	return fmt.Sprintf("projects/%s/global/images/%s", g.Project, g.Name), nil
}

// VMwareOVA returns the RHCOS release of arch's vSphere OVA and where to download it.
func (s *Stream) VMwareOVA(arch string) (release, location string, err error) {
	a, err := s.arch(arch)
	if err != nil {
		return "", "", err
	}
	path := fmt.Sprintf("architectures.%s.artifacts.vmware", arch)
	v, ok := a.Artifacts["vmware"]
	switch {
	case !ok || v.Release == "":
		return "", "", s.errorf("%s: artifact 'vmware' not found", path)
	case v.Formats["ova"].Disk == nil || v.Formats["ova"].Disk.Location == "":
		return "", "", s.errorf("%s.formats.ova.disk.location is empty", path)
	}
	return v.Release, v.Formats["ova"].Disk.Location, nil
}

// AzureMarketplace returns arch's Azure marketplace images, nil when the stream has
// none (OKD's streams have none).
func (s *Stream) AzureMarketplace(arch string) (*AzureMarketplace, error) {
	a, err := s.arch(arch)
	if err != nil {
		return nil, err
	}
	if a.Extensions == nil || a.Extensions.Marketplace == nil {
		return nil, nil
	}
	return a.Extensions.Marketplace.Azure, nil
}

func (s *Stream) arch(arch string) (StreamArch, error) {
	a, ok := s.Architectures[arch]
	if !ok {
		return StreamArch{}, s.errorf("architectures: no %s (the stream has %s)", arch, keys(s.Architectures))
	}
	return a, nil
}

func (s *Stream) errorf(format string, args ...any) error {
	return fmt.Errorf("stream metadata %q: "+format, append([]any{s.Name}, args...)...)
}

func keys[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}
