package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pullingTool installs a stand-in for tool that logs its arguments, prints the summary
// ostree-ext prints before a pull, and answers status --json with status.
func pullingTool(t *testing.T, root, tool, status string) {
	t.Helper()
	statusTool(t, root, tool, status)
	p := filepath.Join(root, toolPaths[tool])
	script := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_ROOT/log\"\n" +
		"if [ \"$1\" = status ]; then cat \"$FAKE_ROOT/status.json\"; exit 0; fi\n" +
		"case \"$*\" in *--download-only*) echo 'layers already present: 3; layers needed: 51 (1.1 GB)';; esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestStageImageWithRPMOSTree(t *testing.T) {
	root := t.TempDir()
	pullingTool(t, root, RPMOSTree, `{"deployments":[{"booted":true}]}`)
	o := NewOSTree(root, directRunner)
	fetched, err := o.StageImage(t.Context(), "quay.io/fcos@sha256:aa")
	if err != nil {
		t.Fatal(err)
	}
	if fetched != "51 layers, 1.1 GB" {
		t.Fatalf("fetched = %q", fetched)
	}
	if err := o.DeployStaged(t.Context(), "quay.io/fcos@sha256:aa"); err != nil {
		t.Fatal(err)
	}
	want := "rpm-ostree rebase --experimental --download-only ostree-unverified-registry:quay.io/fcos@sha256:aa\n" +
		"rpm-ostree rebase --experimental --cache-only ostree-unverified-registry:quay.io/fcos@sha256:aa\n"
	if got := toolLog(t, root); got != want {
		t.Fatalf("commands run:\n%s\nwant:\n%s", got, want)
	}
}

func TestStageImageWithBootc(t *testing.T) {
	root := t.TempDir()
	pullingTool(t, root, Bootc, `{"status":{"booted":{"image":{"image":{"image":"quay.io/a:1"},"imageDigest":"sha256:01"}},
"staged":{"image":{"image":{"image":"quay.io/a:2"},"imageDigest":"sha256:02"},"downloadOnly":true}}}`)
	o := NewOSTree(root, directRunner)
	if _, err := o.StageImage(t.Context(), "quay.io/a:2"); err != nil {
		t.Fatal(err)
	}
	// The locked deployment is the image's: it is unlocked, no image named.
	if err := o.DeployStaged(t.Context(), "quay.io/a:2"); err != nil {
		t.Fatal(err)
	}
	// Another image (the locked one is not it, or a reboot dropped it): a plain switch,
	// which finds what was downloaded already present.
	if err := o.DeployStaged(t.Context(), "quay.io/a:3"); err != nil {
		t.Fatal(err)
	}
	want := "bootc switch --download-only quay.io/a:2\n" +
		"bootc status --json\nbootc switch --from-downloaded\n" +
		"bootc status --json\nbootc switch quay.io/a:3\n"
	if got := toolLog(t, root); got != want {
		t.Fatalf("commands run:\n%s\nwant:\n%s", got, want)
	}
}

func TestStageImageFailureAndNoTool(t *testing.T) {
	root := t.TempDir()
	fakeTool(t, root, RPMOSTree, 1)
	_, err := NewOSTree(root, directRunner).StageImage(t.Context(), "quay.io/x:1")
	var ee *ExecError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "--download-only") {
		t.Fatalf("failed download: %v", err)
	}
	var nt *NoToolError
	if _, err := NewOSTree(t.TempDir(), directRunner).StageImage(t.Context(), "quay.io/x:1"); !errors.As(err, &nt) {
		t.Fatalf("stage without tools: %v", err)
	}
}
