package host

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/ospull"
)

// streamingRunner is directRunner copying the output to host.LiveOutput as it comes,
// as ChrootRunner does.
func streamingRunner(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, name), args...)
	cmd.Env = append(os.Environ(), "FAKE_ROOT="+root)
	var out bytes.Buffer
	var w io.Writer = &out
	if live := LiveOutput(ctx); live != nil {
		w = io.MultiWriter(&out, live)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.Bytes(), err
}

// pullingTool installs a stand-in for tool that logs its arguments, prints the summary
// ostree-ext prints before a pull, and answers status --json with status.
func pullingTool(t *testing.T, root, tool, status string) {
	t.Helper()
	statusTool(t, root, tool, status)
	p := filepath.Join(root, toolPaths[tool])
	// rpm-ostree's output (rust/src/sysroot_upgrade.rs, as an MCO daemon's journal
	// shows it); bootc's is ostree-ext's summary, its per-layer bar needing a terminal.
	pull := "echo 'layers already present: 3; layers needed: 51 (1.1 GB)'"
	if tool == RPMOSTree {
		pull = "printf 'Pulling manifest: ostree-unverified-registry:x\\nostree chunk layers already present: 3\\n" +
			"ostree chunk layers needed: 50 (1.1 GB)\\ncustom layers needed: 1 (12.0 MB)\\n" +
			"[0/51] Fetching ostree chunk sha256:2c4a9e0f3d1b (600.0 MB)...'; printf 'done\\n'; " +
			"printf '[1/51] Fetching layer 55fc5bbdeea1d9e6854 (1.4 MB)...done\\n'"
	}
	script := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_ROOT/log\"\n" +
		"if [ \"$1\" = status ]; then cat \"$FAKE_ROOT/status.json\"; exit 0; fi\n" +
		"case \"$*\" in *--download-only*) " + pull + ";; esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestStageImageWithRPMOSTree(t *testing.T) {
	root := t.TempDir()
	pullingTool(t, root, RPMOSTree, `{"deployments":[{"booted":true}]}`)
	o := NewOSTree(root, streamingRunner)
	var seen []ospull.Progress
	fetched, err := o.StageImage(t.Context(), "quay.io/fcos@sha256:aa", func(p ospull.Progress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if fetched != "51 layers, 1.1 GB" {
		t.Fatalf("fetched = %q", fetched)
	}
	last := ospull.Progress{Bytes: 601.4e6, TotalBytes: 1.112e9, Layers: 2, TotalLayers: 51}
	// How many calls depends on how the output arrives; each says more than the last.
	if len(seen) == 0 || seen[len(seen)-1] != last {
		t.Fatalf("progress seen %+v, want it to end at %+v", seen, last)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Bytes < seen[i-1].Bytes || seen[i].Layers < seen[i-1].Layers {
			t.Fatalf("progress went back: %+v", seen)
		}
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
	o := NewOSTree(root, directRunner) // a Runner that does not stream: read at the end
	var seen []ospull.Progress
	if _, err := o.StageImage(t.Context(), "quay.io/a:2", func(p ospull.Progress) { seen = append(seen, p) }); err != nil {
		t.Fatal(err)
	}
	if want := (ospull.Progress{TotalBytes: 1.1e9, TotalLayers: 51}); len(seen) != 1 || seen[0] != want {
		t.Fatalf("progress seen %+v, want %+v", seen, want)
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
	_, err := NewOSTree(root, directRunner).StageImage(t.Context(), "quay.io/x:1", nil)
	var ee *ExecError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "--download-only") {
		t.Fatalf("failed download: %v", err)
	}
	var nt *NoToolError
	if _, err := NewOSTree(t.TempDir(), directRunner).StageImage(t.Context(), "quay.io/x:1", nil); !errors.As(err, &nt) {
		t.Fatalf("stage without tools: %v", err)
	}
}
