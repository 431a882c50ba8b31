package cri_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
)

// writeConf writes the registries configuration files under a new root: files by path
// relative to /etc/containers. It returns registries.conf's path.
func writeConf(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "etc/containers")
	for p, data := range files {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root + cri.RegistriesConf
}

const digest = "@sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"

// Where the runtime looks for an image, as containers-registries.conf(5) says: the
// longest prefix ending at a path boundary wins, a drop-in replaces an entry of the same
// prefix, mirrors come first (those whose pull-from-mirror admits the reference), the
// source last unless blocked, a wildcard prefix covers subdomains.
func TestRegistriesSources(t *testing.T) {
	conf := writeConf(t, map[string]string{
		"registries.conf": `
unqualified-search-registries = ["quay.io"]
[[registry]]
location = "quay.io/org"
[[registry.mirror]]
location = "replaced.example.com/org"

[[registry]]
prefix = "quay.io"
location = "quay.io"
[[registry.mirror]]
location = "all.example.com/quay"
`,
		"registries.conf.d/50-mirrors.conf": `
[[registry]]
prefix = "quay.io/org"
location = "quay.io/org"
blocked = true
[[registry.mirror]]
location = "digests.example.com/org"
insecure = true
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tags.example.com/org"
pull-from-mirror = "tag-only"

[[registry]]
prefix = "*.internal.example.com"
mirror-by-digest-only = true
[[registry.mirror]]
location = "cache.example.com/internal"
`,
		"registries.conf.d/README": "not a .conf: not read",
	})
	regs, err := cri.LoadRegistries(conf, conf+".d")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		image string
		want  []cri.PullSource
		err   string
	}{
		{"quay.io/org/app" + digest, []cri.PullSource{{Image: "digests.example.com/org/app" + digest, Insecure: true, Mirror: true}}, ""},
		{"quay.io/org/app:v1", []cri.PullSource{{Image: "tags.example.com/org/app:v1", Mirror: true}}, ""},
		// quay.io/orgx is not under quay.io/org: the shorter prefix serves it.
		{"quay.io/orgx/app" + digest, []cri.PullSource{{Image: "all.example.com/quay/orgx/app" + digest, Mirror: true}, {Image: "quay.io/orgx/app" + digest}}, ""},
		{"registry.internal.example.com:5000/team/app" + digest, []cri.PullSource{
			{Image: "cache.example.com/internal/team/app" + digest, Mirror: true},
			{Image: "registry.internal.example.com:5000/team/app" + digest}}, ""},
		{"registry.internal.example.com/team/app:v1", []cri.PullSource{{Image: "registry.internal.example.com/team/app:v1"}}, ""},
		{"docker.io/library/busybox:1", []cri.PullSource{{Image: "docker.io/library/busybox:1"}}, ""},
		{"quay.io/org/app:latest@sha256:" + strings.Repeat("0", 64), []cri.PullSource{{Image: "digests.example.com/org/app:latest@sha256:" + strings.Repeat("0", 64), Insecure: true, Mirror: true}}, ""},
	} {
		got, err := regs.Sources(c.image)
		if err != nil {
			t.Errorf("Sources(%s): %v", c.image, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Sources(%s):\n got %+v\nwant %+v", c.image, got, c.want)
		}
	}

	blocked := writeConf(t, map[string]string{"registries.conf": `
[[registry]]
location = "quay.io/org"
blocked = true
[[registry.mirror]]
location = "tags.example.com/org"
pull-from-mirror = "tag-only"
`})
	regs, err = cri.LoadRegistries(blocked, blocked+".d")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := regs.Sources("quay.io/org/app" + digest); err == nil || !strings.Contains(err.Error(), "registry quay.io/org is blocked") || !strings.Contains(err.Error(), "quay.io/org/app"+digest) {
		t.Errorf("a blocked source without a mirror for a digest: %+v, %v", got, err)
	}

	bad := writeConf(t, map[string]string{"registries.conf.d/10-bad.conf": "[[registry]\nlocation = 1\n"})
	if _, err := cri.LoadRegistries(bad, bad+".d"); err == nil || !strings.Contains(err.Error(), "10-bad.conf") {
		t.Errorf("a broken drop-in: %v, want an error naming it", err)
	}
	if regs, err := cri.LoadRegistries(filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "none.d")); err != nil || len(regs.Entries) != 0 {
		t.Errorf("no configuration: %+v, %v", regs, err)
	}
}

// push writes img to host/repo:latest and returns host/repo@digest.
func push(t *testing.T, img v1.Image, host, repo string) string {
	t.Helper()
	ref, err := name.ParseReference(host+"/"+repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return host + "/" + repo + "@" + d.String()
}

// The size lookup asks where the runtime pulls: with the source down, the image is
// sized from its mirror (configured in a drop-in, as an ImageDigestMirrorSet is); with
// the mirror lacking it, the error names both places; a blocked source is not asked
// even when it has the image.
func TestManifestsThroughMirrors(t *testing.T) {
	ctx := t.Context()
	source := critest.StartRegistry(t)
	mirror := critest.StartRegistry(t)
	img, err := random.Image(1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	image := push(t, img, source.Host, "team/app")
	atMirror := push(t, img, mirror.Host, "mirrored/team/app")
	if atMirror != mirror.Host+"/mirrored"+strings.TrimPrefix(image, source.Host) {
		t.Fatalf("the mirror's pull spec %s does not follow from %s", atMirror, image)
	}
	want := wantBlobs(t, img)
	conf := writeConf(t, map[string]string{"registries.conf.d/99-idms.conf": `
[[registry]]
prefix = "` + source.Host + `/team"
location = "` + source.Host + `/team"
[[registry.mirror]]
location = "` + mirror.Host + `/mirrored/team"
pull-from-mirror = "digest-only"
`})
	m := &cri.Manifests{RegistriesConf: conf}

	source.Down()
	blobs, err := m.Blobs(ctx, image)
	if err != nil {
		t.Fatalf("sized with the source down: %v", err)
	}
	if got := blobSum(blobs); got != want || len(blobs) != 3 {
		t.Errorf("sized from the mirror: %d bytes in %d blobs, want %d in 3", got, len(blobs), want)
	}
	if _, err := (&cri.Manifests{}).Blobs(ctx, image); err == nil {
		t.Fatal("without the configuration the image was sized with its registry down: the test proves nothing")
	}

	// Not at the mirror, source down: both places named.
	other := source.Host + "/team/other" + digest
	_, err = m.Blobs(ctx, other)
	if err == nil {
		t.Fatalf("%s sized from nowhere", other)
	}
	for _, w := range []string{"size of image " + other, "mirror " + mirror.Host + "/mirrored/team/other" + digest, "source " + other} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}

	// Blocked: the source has the image and is up, the mirror lacks it.
	source.Up(t)
	only := push(t, img, source.Host, "team/only-at-source")
	blockedConf := writeConf(t, map[string]string{"registries.conf": `
[[registry]]
location = "` + source.Host + `/team"
blocked = true
[[registry.mirror]]
location = "` + mirror.Host + `/mirrored/team"
`})
	if _, err := (&cri.Manifests{RegistriesConf: blockedConf}).Blobs(ctx, only); err == nil || strings.Contains(err.Error(), "source ") ||
		!strings.Contains(err.Error(), "mirror "+mirror.Host+"/mirrored/team/only-at-source@") {
		t.Errorf("a blocked source was asked for %s: %v", only, err)
	}
	if _, err := (&cri.Manifests{}).Blobs(ctx, only); err != nil {
		t.Errorf("%s at the source, asked directly: %v", only, err)
	}
}
