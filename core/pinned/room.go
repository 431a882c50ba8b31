package pinned

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Blob is one blob an image's manifest lists (a layer or the config): its digest and
// its size as the registry stores it (compressed).
type Blob struct {
	Digest string
	Size   int64
}

// ImageBlobs is an image the runtime does not have yet and the blobs of its manifest.
type ImageBlobs struct {
	Image string
	Blobs []Blob
}

// maxNamedImages bounds how many images a refusal names with their sizes: a set may
// list 500, and the condition's message must stay readable.
const maxNamedImages = 5

// CheckRoom is MCO's storage rule for pinned images (checkNodeAllocatableStorage and
// checkImagePayloadStorage): the node's allocatable ephemeral storage must be at least
// minFree, and twice the size of the images still to pull (compressed layers, and
// twice to account for their decompression) must be less than what the allocatable
// storage leaves above minFree. A blob shared by several images is counted once, as
// MCO's digest cache does. The refusal gives the numbers: needed, available and the
// per-image sizes summed.
func CheckRoom(node string, allocatable, minFree int64, images []ImageBlobs) error {
	if allocatable < minFree {
		return fmt.Errorf("node %s has %s (%d bytes) of allocatable ephemeral storage; at least %s (%d bytes) must stay free after pulling pinned images",
			node, binaryBytes(allocatable), allocatable, binaryBytes(minFree), minFree)
	}
	type sized struct {
		image string
		size  int64
	}
	seen := map[string]bool{}
	var total int64
	per := make([]sized, 0, len(images))
	for _, im := range images {
		var n int64
		for _, b := range im.Blobs {
			if seen[b.Digest] {
				continue
			}
			seen[b.Digest] = true
			n += max(b.Size, 0)
		}
		per = append(per, sized{im.Image, n})
		total += n
	}
	need := 2 * total
	if need < allocatable-minFree {
		return nil
	}
	// The largest first: they are what an operator would remove.
	slices.SortStableFunc(per, func(a, b sized) int { return cmp.Compare(b.size, a.size) })
	parts := make([]string, 0, min(len(per), maxNamedImages)+1)
	for i, s := range per {
		if i == maxNamedImages {
			parts = append(parts, fmt.Sprintf("%d more", len(per)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.image, HumanBytes(uint64(s.size))))
	}
	return fmt.Errorf("node %s has not enough storage for its pinned images: they need %d bytes (2 x %d bytes of %d images to pull, for decompression, + %d bytes that must stay free) and %d bytes of ephemeral storage are allocatable; images: %s = %s",
		node, need+minFree, total, len(images), minFree, allocatable, strings.Join(parts, " + "), HumanBytes(uint64(total)))
}

// binaryBytes prints n as a Quantity in binary units ("16Gi").
func binaryBytes(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }
