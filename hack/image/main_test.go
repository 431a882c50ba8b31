package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const testVersion = "v0.0.0-imagetest"

// staticBinary builds mcotui as make image does (CGO_ENABLED=0, the version stamped)
// into dir, with make image's flags, so that the two share the build cache.
func staticBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mcotui-static")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion, "-o", bin, ".")
	cmd.Dir = "../.." // the module root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the static binary: %v\n%s", err, out)
	}
	return bin
}

// TestImage builds the image from a real static build of mcotui, reads it back from both
// the OCI layout and the tarball, checks its config (entrypoint, non-root user, OCI
// labels with the version), and runs the binary taken out of its layers: `mcotui
// version` prints the build's version. The CA certificates in it are the build
// machine's.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	o := Options{
		Binary: staticBinary(t, dir), Version: testVersion, Revision: "0123abc",
		Layout: filepath.Join(dir, "oci"), Tarball: filepath.Join(dir, "mcotui.tar"),
	}
	digest, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}

	idx, err := layout.ImageIndexFromPath(o.Layout)
	if err != nil {
		t.Fatal(err)
	}
	fromLayout, err := idx.Image(digest)
	if err != nil {
		t.Fatalf("the layout has no image %s: %v", digest, err)
	}
	fromTar, err := tarball.ImageFromPath(o.Tarball, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball (docker save's format) carries the config and the layers, not the
	// manifest: the same image is the same config.
	wantCfg, err := fromLayout.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := fromTar.ConfigName(); err != nil || c != wantCfg {
		t.Errorf("the tarball's image config is %s (%v), the layout's %s", c, err, wantCfg)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(o.Tarball) })
	if err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "ghcr.io/mcotui/mcotui:"+testVersion {
		t.Errorf("tarball tags: %+v (%v)", m, err)
	}

	cfg, err := fromLayout.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/bin/mcotui" {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", c.User)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.title":    "mcotui",
		"org.opencontainers.image.revision": "0123abc",
		"org.opencontainers.image.source":   "https://github.com/mcotui/mcotui",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}

	files := extract(t, fromLayout)
	bin := filepath.Join(dir, "extracted-mcotui")
	if err := os.WriteFile(bin, files["usr/bin/mcotui"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	if mode := files["usr/bin/mcotui"].mode; mode&0o111 == 0 {
		t.Errorf("the binary's mode in the image is %o: not executable", mode)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "mcotui "+testVersion {
		t.Errorf("the image's mcotui version: %q (%v), want %q", out, err, "mcotui "+testVersion)
	}
	ca, err := os.ReadFile(DefaultCAFile)
	if err != nil {
		t.Fatalf("the build machine's CA certificates: %v (apt-get install ca-certificates)", err)
	}
	if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"].data, ca) {
		t.Errorf("the image's CA certificates differ from %s", DefaultCAFile)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd names no nonroot user:\n%s", files["etc/passwd"].data)
	}

	// The same inputs build the same image.
	again, err := Build(Options{Binary: o.Binary, Version: testVersion, Revision: "0123abc", Tarball: filepath.Join(dir, "again.tar")})
	if err != nil || again != digest {
		t.Errorf("a second build is %s (%v), the first %s", again, err, digest)
	}
}

// TestImageRefusals: no CA certificates, a dynamically linked binary, or nowhere to
// write: each fails, saying what to do.
func TestImageRefusals(t *testing.T) {
	dir := t.TempDir()
	// Any dynamically linked ELF program will do; the go tool's cgo-free build is
	// static, so take the machine's own /bin/sh.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no CA certificates", Options{Binary: sh, CAFile: filepath.Join(dir, "none.crt"), Tarball: filepath.Join(dir, "x.tar")},
			"install Debian's ca-certificates package"},
		{"dynamic binary", Options{Binary: sh, Tarball: filepath.Join(dir, "x.tar")}, "dynamically linked"},
		{"no binary", Options{Binary: filepath.Join(dir, "none"), Tarball: filepath.Join(dir, "x.tar")}, "make image builds it first"},
		{"no output", Options{Binary: sh}, "nowhere to write the image"},
	} {
		_, err := Build(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

type file struct {
	data []byte
	mode int64
}

// extract reads the image's flattened file system.
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = file{data: b, mode: h.Mode}
	}
	return files
}
