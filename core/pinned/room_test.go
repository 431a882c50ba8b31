package pinned

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckRoom(t *testing.T) {
	const gi = int64(1) << 30
	img := func(name string, blobs ...Blob) ImageBlobs { return ImageBlobs{Image: name, Blobs: blobs} }
	many := make([]ImageBlobs, 7)
	for i := range many {
		many[i] = img(fmt.Sprintf("r/i%d@x", i), Blob{fmt.Sprintf("sha256:%d", i), int64(i+1) * gi})
	}
	for _, tc := range []struct {
		name             string
		allocatable, min int64
		images           []ImageBlobs
		want             []string // substrings of the refusal; nil means it fits
		wantNot          []string
	}{
		{name: "nothing to pull, above the minimum", allocatable: 17 * gi, min: 16 * gi},
		{name: "below the minimum", allocatable: 10 * gi, min: 16 * gi,
			want: []string{"has 10Gi (10737418240 bytes) of allocatable ephemeral storage; at least 16Gi (17179869184 bytes) must stay free"}},
		{name: "twice the images fit above the minimum", allocatable: 20 * gi, min: 16 * gi,
			images: []ImageBlobs{img("r/a@x", Blob{"sha256:a", gi}, Blob{"sha256:c", gi/2 - 1})}},
		// MCO refuses when twice the images reach what is left above the minimum.
		{name: "twice the images exactly fill what is left", allocatable: 20 * gi, min: 16 * gi,
			images: []ImageBlobs{img("r/a@x", Blob{"sha256:a", 2 * gi})},
			want:   []string{fmt.Sprintf("need %d bytes (2 x %d bytes of 1 images", 20*gi, 2*gi), fmt.Sprintf("%d bytes of ephemeral storage are allocatable", 20*gi), "r/a@x 2.1 GB = 2.1 GB"}},
		{name: "the sum refuses where each alone would fit", allocatable: 20 * gi, min: 16 * gi,
			images: []ImageBlobs{img("r/a@x", Blob{"sha256:a", gi}), img("r/b@x", Blob{"sha256:b", gi + 1})},
			want:   []string{fmt.Sprintf("need %d bytes (2 x %d bytes of 2 images", 20*gi+2, 2*gi+1), "r/b@x 1.1 GB + r/a@x 1.1 GB = 2.1 GB"}},
		{name: "a shared layer is counted once", allocatable: 20 * gi, min: 16 * gi,
			images: []ImageBlobs{img("r/a@x", Blob{"sha256:base", gi}, Blob{"sha256:a", 1}), img("r/b@x", Blob{"sha256:base", gi}, Blob{"sha256:b", 1})}},
		{name: "the largest images are named, the rest counted", allocatable: 17 * gi, min: 16 * gi, images: many,
			want:    []string{"r/i6@x 7.5 GB + r/i5@x 6.4 GB + r/i4@x 5.4 GB + r/i3@x 4.3 GB + r/i2@x 3.2 GB + 2 more = 30.1 GB", "of 7 images"},
			wantNot: []string{"r/i0@x", "r/i1@x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRoom("n1", tc.allocatable, tc.min, tc.images)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("fits, want a refusal")
			}
			for _, w := range append(tc.want, "node n1 ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q names %q", err, w)
				}
			}
		})
	}
}
