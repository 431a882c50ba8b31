package validate

import (
	"fmt"
	"strings"
	"testing"
)

func pisManifest(images ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: machineconfiguration.openshift.io/v1\nkind: PinnedImageSet\nmetadata:\n  name: release\nspec:\n  pinnedImages:")
	if len(images) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, im := range images {
		b.WriteString("  - name: " + im + "\n")
	}
	return b.String()
}

func digest(i int) string {
	return fmt.Sprintf("quay.io/org/img@sha256:%064x", i)
}

func TestPinnedImageSet(t *testing.T) {
	many := make([]string, 501)
	for i := range many {
		many[i] = digest(i)
	}
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"by digest", pisManifest(digest(1), "127.0.0.1:5000/a/b@sha256:"+strings.Repeat("ab", 32)), nil},
		{"tag", pisManifest("quay.io/org/img:latest"), []string{
			`pis.yaml:7:11: error: $.spec.pinnedImages[0].name: image reference "quay.io/org/img:latest" is not by digest: a tag can move, so what is pinned would not be what was tested; write it as host/repository@sha256:<64 hex digits>`}},
		{"short digest", pisManifest("quay.io/org/img@sha256:abc"), []string{
			`pis.yaml:7:11: error: $.spec.pinnedImages[0].name: image reference "quay.io/org/img@sha256:abc" is not host[:port][/namespace]/name@sha256:<64 lowercase hex digits>`}},
		{"none", pisManifest(), []string{
			`pis.yaml:6:17: error: $.spec.pinnedImages: PinnedImageSet release lists no images: spec.pinnedImages needs at least 1`}},
		{"501", pisManifest(many...), []string{
			`pis.yaml:7:3: error: $.spec.pinnedImages: PinnedImageSet release lists 501 images: at most 500 are allowed; split it into several sets`}},
		{"twice", pisManifest(digest(1), digest(1)), []string{
			`pis.yaml:8:11: error: $.spec.pinnedImages[1].name: image "` + digest(1) + `" is listed twice (spec.pinnedImages is keyed by name)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range File("pis.yaml", []byte(tc.data)) {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
