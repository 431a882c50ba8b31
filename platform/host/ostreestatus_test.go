package host

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// statusTool installs a stand-in for tool that logs its arguments and prints out for
// "status --json".
func statusTool(t *testing.T, root, tool, out string) {
	t.Helper()
	p := filepath.Join(root, toolPaths[tool])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "status.json"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_ROOT/log\"\n" +
		"if [ \"$1\" = status ]; then echo 'warning: a note on stderr' >&2; cat \"$FAKE_ROOT/status.json\"; fi\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// rpmOSTreeStatusJSON is trimmed from a real `rpm-ostree status --json` of Fedora CoreOS
// with a layered package and a staged rebase.
const rpmOSTreeStatusJSON = `{
  "deployments": [
    {"id": "fedora-coreos-1", "osname": "fedora-coreos", "booted": false, "staged": true,
     "checksum": "5e6cc9beb75a9b4d1ff7f10b212dad93075e3b25edc7f094ccaf38802efd3cef",
     "container-image-reference": "ostree-unverified-registry:quay.io/fedora/fedora-coreos:next",
     "container-image-reference-digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
     "requested-packages": ["usbguard", "kernel-rt-core"], "requested-base-removals": ["kernel"]},
    {"id": "fedora-coreos-0", "osname": "fedora-coreos", "booted": true, "staged": false,
     "checksum": "618524839cc27cecf195eac774641e64588b24c9bc65e2af4876fa88918a7413",
     "container-image-reference": "ostree-remote-image:fedora:docker://quay.io/fedora/fedora-coreos:stable",
     "container-image-reference-digest": "sha256:2222222222222222222222222222222222222222222222222222222222222222",
     "requested-packages": ["usbguard"], "requested-base-removals": []}
  ],
  "transaction": null
}`

func TestDeploymentsFromRPMOSTree(t *testing.T) {
	root := t.TempDir()
	statusTool(t, root, RPMOSTree, rpmOSTreeStatusJSON)
	o := NewOSTree(root, directRunner)
	booted, staged, err := o.Deployments(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !booted.Booted || booted.Image != "quay.io/fedora/fedora-coreos:stable" || !slices.Equal(booted.RequestedPackages, []string{"usbguard"}) ||
		booted.Digest != "sha256:2222222222222222222222222222222222222222222222222222222222222222" {
		t.Fatalf("booted = %+v", booted)
	}
	if staged == nil || staged.Image != "quay.io/fedora/fedora-coreos:next" || !slices.Equal(staged.RequestedBaseRemovals, []string{"kernel"}) ||
		staged.Digest != "sha256:1111111111111111111111111111111111111111111111111111111111111111" {
		t.Fatalf("staged = %+v", staged)
	}
	if err := o.Layer(t.Context(), []string{"update", "--install", "sysstat"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Layer(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := toolLog(t, root); got != "rpm-ostree status --json\nrpm-ostree update --install sysstat\n" {
		t.Fatalf("commands run: %q", got)
	}
}

func TestDeploymentsFromBootc(t *testing.T) {
	root := t.TempDir()
	// The fields bootc's schema requires (docs/src/host-v1.schema.json): a BootEntry's
	// incompatible and pinned, an ImageStatus's image, imageDigest and architecture.
	statusTool(t, root, Bootc, `{"apiVersion":"org.containers.bootc/v1","kind":"BootcHost",
"status":{"staged":{"image":{"image":{"image":"quay.io/centos-bootc/centos-bootc:stream10-next","transport":"registry"},
  "imageDigest":"sha256:3333333333333333333333333333333333333333333333333333333333333333","architecture":"amd64"},
  "incompatible":false,"pinned":false,"downloadOnly":true},
 "booted":{"image":{"image":{"image":"quay.io/centos-bootc/centos-bootc:stream10","transport":"registry"},
  "imageDigest":"sha256:4444444444444444444444444444444444444444444444444444444444444444","architecture":"amd64"},
  "incompatible":false,"pinned":false,"downloadOnly":false}}}`)
	o := NewOSTree(root, directRunner)
	booted, staged, err := o.Deployments(t.Context())
	if err != nil || booted.Image != "quay.io/centos-bootc/centos-bootc:stream10" ||
		booted.Digest != "sha256:4444444444444444444444444444444444444444444444444444444444444444" || booted.DownloadOnly {
		t.Fatalf("Deployments = %+v, %+v, %v", booted, staged, err)
	}
	if staged == nil || staged.Image != "quay.io/centos-bootc/centos-bootc:stream10-next" || !staged.DownloadOnly ||
		staged.Digest != "sha256:3333333333333333333333333333333333333333333333333333333333333333" {
		t.Fatalf("staged = %+v", staged)
	}
	var nt *NoToolError
	if err := o.Layer(t.Context(), []string{"update", "--install", "x"}); !errors.As(err, &nt) || !strings.Contains(err.Error(), "kernel type or extensions, which needs rpm-ostree") {
		t.Fatalf("Layer on a bootc host: %v", err)
	}
}

func TestDeploymentsWithoutTools(t *testing.T) {
	var nt *NoToolError
	if _, _, err := NewOSTree(t.TempDir(), directRunner).Deployments(t.Context()); !errors.As(err, &nt) {
		t.Fatalf("Deployments without tools: %v", err)
	}
}

func TestImageOfReference(t *testing.T) {
	for ref, want := range map[string]string{
		"ostree-unverified-registry:quay.io/a/b:c":              "quay.io/a/b:c",
		"ostree-unverified-image:docker://quay.io/a/b@sha256:0": "quay.io/a/b@sha256:0",
		"ostree-image-signed:docker://quay.io/a/b":              "quay.io/a/b",
		"ostree-remote-registry:fedora:quay.io/a/b":             "quay.io/a/b",
		"ostree-remote-image:fedora:docker://quay.io/a/b":       "quay.io/a/b",
		"ostree-unverified-image:oci:/var/tmp/img":              "/var/tmp/img",
	} {
		if got, err := ImageOfReference(ref); err != nil || got != want {
			t.Errorf("ImageOfReference(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, bad := range []string{"quay.io", "weird:quay.io/a", "ostree-image-signed:docker:quay.io/a"} {
		if got, err := ImageOfReference(bad); err == nil {
			t.Errorf("ImageOfReference(%q) = %q, want an error", bad, got)
		}
	}
}
