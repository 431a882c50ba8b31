// Package pinned is the pure model of PinnedImageSets (machineconfiguration.openshift.io/v1)
// as MCO's daemon handles them (pkg/daemon/pinned_image_set.go): which images a pool
// pins, the CRI-O drop-in that pins them, the MachineConfigNode conditions and
// status.pinnedImageSets entries that report the work, and the pool's PinnedImageSets
// synchronizer status. The agent does the pulling (agent/pinned.go); the controller,
// `mcotui status` and the TUI read what is written through this package.
package pinned

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DropInPath is the CRI-O configuration drop-in that pins the images, as MCO writes it.
const DropInPath = "/etc/crio/crio.conf.d/50-pinned-images"

// CRIOUnit is reloaded after the drop-in changes.
const CRIOUnit = "crio.service"

// MaxImages and MinImages bound spec.pinnedImages (the CRD's MinItems and MaxItems).
const (
	MinImages = 1
	MaxImages = 500
	// maxRefLength is the CRD's limit on one pull spec.
	maxRefLength = 447
)

// Condition reasons, MCO's.
const (
	ReasonPrefetch   = "ImagePrefetch"
	ReasonAsExpected = "AsExpected"
	ReasonFailed     = "PrefetchFailed"
)

// digestRef is host[:port][/namespace]/name@sha256:<64 lowercase hex>, the form the
// CRD's ImageDigestFormat admits.
var digestRef = regexp.MustCompile(`^([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+(:[0-9]+)?(/[a-zA-Z0-9._-]+)+@sha256:[a-f0-9]{64}$`)

// CheckRef says why ref is not a pull spec by digest, or nil.
func CheckRef(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("empty image reference")
	case len(ref) > maxRefLength:
		return fmt.Errorf("image reference %q is %d characters long; at most %d are allowed", ref, len(ref), maxRefLength)
	case !strings.Contains(ref, "@"):
		return fmt.Errorf("image reference %q is not by digest: a tag can move, so what is pinned would not be what was tested; write it as host/repository@sha256:<64 hex digits>", ref)
	case !digestRef.MatchString(ref):
		return fmt.Errorf("image reference %q is not host[:port][/namespace]/name@sha256:<64 lowercase hex digits>", ref)
	}
	return nil
}

// Images is the sorted, deduplicated list of the images of sets, as MCO's
// uniqueSortedImageNames makes it (names trimmed, empty ones left out).
func Images(sets []*mcfgv1.PinnedImageSet) []string {
	var out []string
	for _, s := range sets {
		out = append(out, SetImages(s)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SetImages lists one set's images in the set's order, trimmed, without empty names.
func SetImages(s *mcfgv1.PinnedImageSet) []string {
	out := make([]string, 0, len(s.Spec.PinnedImages))
	for _, r := range s.Spec.PinnedImages {
		if n := strings.TrimSpace(string(r.Name)); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// DropIn is the content of DropInPath pinning images (sorted), in the TOML layout MCO's
// encoder (BurntSushi/toml) produces. No images means no file.
func DropIn(images []string) []byte {
	if len(images) == 0 {
		return nil
	}
	quoted := make([]string, len(images))
	for i, im := range images {
		quoted[i] = strconv.Quote(im)
	}
	return []byte("[crio]\n  [crio.image]\n    pinned_images = [" + strings.Join(quoted, ", ") + "]\n")
}

// Progress is how far a node is with its pool's images.
type Progress struct {
	Done, Total int
	Bytes       uint64
}

func (p Progress) String() string {
	return fmt.Sprintf("%d/%d images, %s", p.Done, p.Total, HumanBytes(p.Bytes))
}

// HumanBytes prints n in SI units, as image sizes are usually given.
func HumanBytes(n uint64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Condition is one of the two PinnedImageSets conditions to write.
type Condition struct {
	Type    mcfgv1.StateProgress
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Prefetching says the node pulls its images, with how far it is: MCO says only "node
// is prefetching images: <node>", which leaves a set of hundreds of images looking stuck.
func Prefetching(node string, p Progress) Condition {
	return Condition{mcfgv1.MachineConfigNodePinnedImageSetsProgressing, metav1.ConditionTrue, ReasonPrefetch,
		fmt.Sprintf("node is prefetching images: %s: %s pulled", node, p)}
}

// Complete says the images are pulled and pinned; note is appended (the runtime pins by
// prefetch only).
func Complete(p Progress, note string) Condition {
	msg := "All pinned image sets complete"
	if p.Total > 0 {
		msg += fmt.Sprintf(": %d images, %s", p.Total, HumanBytes(p.Bytes))
	}
	if note != "" {
		msg += "; " + note
	}
	return Condition{mcfgv1.MachineConfigNodePinnedImageSetsProgressing, metav1.ConditionFalse, ReasonAsExpected, msg}
}

// Stopped says the node no longer prefetches, after a failure.
func Stopped(p Progress) Condition {
	return Condition{mcfgv1.MachineConfigNodePinnedImageSetsProgressing, metav1.ConditionFalse, ReasonFailed,
		fmt.Sprintf("prefetch stopped after %s pulled", p)}
}

// Healthy is PinnedImageSetsDegraded False, MCO's "All is good".
func Healthy() Condition {
	return Condition{mcfgv1.MachineConfigNodePinnedImageSetsDegraded, metav1.ConditionFalse, ReasonAsExpected, "All is good"}
}

// Failed is PinnedImageSetsDegraded True with the error (MCO's message names no image;
// this one does).
func Failed(err error) Condition {
	return Condition{mcfgv1.MachineConfigNodePinnedImageSetsDegraded, metav1.ConditionTrue, ReasonFailed, "Error: " + err.Error()}
}

// PrefetchOnly is the note for a runtime that has no pinning configuration.
func PrefetchOnly(runtime string) string {
	return fmt.Sprintf("pinned by prefetch only: %s has no pinned_images setting", runtime)
}

// IsCRIO says whether a CRI runtime name (VersionResponse.runtime_name) is CRI-O.
func IsCRIO(runtime string) bool {
	r := strings.ToLower(runtime)
	return r == "cri-o" || r == "crio"
}

// SetStatus is a set's status.pinnedImageSets entry: desired is the set's generation,
// current too once done, lastFailed and its error on failure (MCO's
// createApplyConfigForImageSet). prev is the entry written before, whose generations
// must not decrease (the CRD's rules).
func SetStatus(set *mcfgv1.PinnedImageSet, prev *mcfgv1.MachineConfigNodeStatusPinnedImageSet, done bool, err error) mcfgv1.MachineConfigNodeStatusPinnedImageSet {
	gen := int32(min(set.Generation, 1<<31-1)) //nolint:gosec // bounded above
	gen = max(gen, 1)
	s := mcfgv1.MachineConfigNodeStatusPinnedImageSet{Name: set.Name, DesiredGeneration: gen}
	if prev != nil {
		s.CurrentGeneration = prev.CurrentGeneration
		s.LastFailedGeneration = prev.LastFailedGeneration
		s.LastFailedGenerationError = prev.LastFailedGenerationError
		s.DesiredGeneration = max(s.DesiredGeneration, prev.DesiredGeneration)
	}
	switch {
	case err != nil:
		s.LastFailedGeneration = s.DesiredGeneration
		s.LastFailedGenerationError = err.Error()
	case done:
		s.CurrentGeneration = s.DesiredGeneration
		s.LastFailedGenerationError = ""
		if s.LastFailedGeneration != 0 {
			// The CRD requires an error with a failed generation; say it was overcome.
			s.LastFailedGenerationError = "recovered: generation " + strconv.Itoa(int(s.CurrentGeneration)) + " pulled"
		}
	}
	return s
}

// Updated says whether a MachineConfigNode's pinned image sets are all at their desired
// generation (MCO's isPinnedImageSetsUpdated: a node with none is updated).
func Updated(mcn *mcfgv1.MachineConfigNode) bool {
	if mcn == nil {
		return false
	}
	for _, s := range mcn.Status.PinnedImageSets {
		if s.DesiredGeneration == 0 || s.CurrentGeneration != s.DesiredGeneration {
			return false
		}
	}
	return true
}

// Synchronizer is the pool's PinnedImageSets synchronizer status, as MCO's node
// controller computes it: machineCount the pool's machines, updatedMachineCount those
// whose MachineConfigNode is Updated, and the ready, unavailable and available counts
// of the pool's status. mcns has one entry per member (nil when it has none).
func Synchronizer(status mcfgv1.MachineConfigPoolStatus, mcns []*mcfgv1.MachineConfigNode) mcfgv1.PoolSynchronizerStatus {
	var updated int64
	for _, m := range mcns {
		if Updated(m) {
			updated++
		}
	}
	machines := int64(status.MachineCount)
	return mcfgv1.PoolSynchronizerStatus{
		PoolSynchronizerType:    mcfgv1.PinnedImageSets,
		MachineCount:            machines,
		UpdatedMachineCount:     min(updated, machines),
		ReadyMachineCount:       int64(status.ReadyMachineCount),
		UnavailableMachineCount: int64(status.UnavailableMachineCount),
		AvailableMachineCount:   machines - int64(status.UnavailableMachineCount),
		ObservedGeneration:      status.ObservedGeneration,
	}
}

// NodeSummary is one node's pinned-image state for display: "" when the node has no
// pinned image sets, else e.g. "3/3 sets", "pulling: 2/5 images, 20.1 MB", "failed".
func NodeSummary(mcn *mcfgv1.MachineConfigNode) string {
	if mcn == nil {
		return ""
	}
	if c := find(mcn, mcfgv1.MachineConfigNodePinnedImageSetsDegraded); c != nil && c.Status == metav1.ConditionTrue {
		return "failed"
	}
	if c := find(mcn, mcfgv1.MachineConfigNodePinnedImageSetsProgressing); c != nil && c.Status == metav1.ConditionTrue {
		if _, p, ok := strings.Cut(c.Message, mcn.Name+": "); ok {
			return "pulling: " + strings.TrimSuffix(p, " pulled")
		}
		return "pulling"
	}
	if len(mcn.Status.PinnedImageSets) == 0 {
		return ""
	}
	done := 0
	for _, s := range mcn.Status.PinnedImageSets {
		if s.DesiredGeneration != 0 && s.CurrentGeneration == s.DesiredGeneration {
			done++
		}
	}
	return fmt.Sprintf("%d/%d sets", done, len(mcn.Status.PinnedImageSets))
}

// Conditions returns the node's two PinnedImageSets conditions (nil when absent).
func Conditions(mcn *mcfgv1.MachineConfigNode) (progressing, degraded *metav1.Condition) {
	if mcn == nil {
		return nil, nil
	}
	return find(mcn, mcfgv1.MachineConfigNodePinnedImageSetsProgressing), find(mcn, mcfgv1.MachineConfigNodePinnedImageSetsDegraded)
}

func find(mcn *mcfgv1.MachineConfigNode, t mcfgv1.StateProgress) *metav1.Condition {
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == string(t) {
			return &mcn.Status.Conditions[i]
		}
	}
	return nil
}
