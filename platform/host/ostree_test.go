package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// directRunner runs a tool's fake script from under the test's root without chroot: the
// scripts are shell scripts that need the test machine's /bin/sh, which a temporary root
// does not have. What is under test is which commands the OSTree sends, not chroot.
func directRunner(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, name), args...)
	cmd.Env = append(os.Environ(), "FAKE_ROOT="+root)
	return cmd.CombinedOutput()
}

// fakeTool installs a script at tool's path under root that logs its arguments to
// root/log and exits with code.
func fakeTool(t *testing.T, root, tool string, code int) {
	t.Helper()
	p := filepath.Join(root, toolPaths[tool])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_ROOT/log\"\necho fake output\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func toolLog(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "log"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOSTreeKernelArgumentsWithRPMOSTree(t *testing.T) {
	root := t.TempDir()
	fakeTool(t, root, RPMOSTree, 0)
	o := NewOSTree(root, directRunner)
	if got := o.Tools(); len(got) != 1 || got[0] != RPMOSTree {
		t.Fatalf("Tools() = %v", got)
	}
	if err := o.SetKernelArguments(t.Context(), []string{"a=1", "b"}, []string{"c=2"}); err != nil {
		t.Fatal(err)
	}
	if err := o.SetKernelArguments(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Rebase(t.Context(), "quay.io/fcos:next"); err != nil {
		t.Fatal(err)
	}
	if err := o.DiscardPending(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "rpm-ostree kargs --delete-if-present=a=1 --delete-if-present=b --append-if-missing=c=2\n" +
		"rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/fcos:next\n" +
		"rpm-ostree cleanup -p\n"
	if got := toolLog(t, root); got != want {
		t.Fatalf("commands run:\n%s\nwant:\n%s", got, want)
	}
}

func TestOSTreeBootcSwitchesButHasNoKargs(t *testing.T) {
	root := t.TempDir()
	fakeTool(t, root, Bootc, 0)
	o := NewOSTree(root, directRunner)
	if err := o.Rebase(t.Context(), "quay.io/img:2"); err != nil {
		t.Fatal(err)
	}
	if got := toolLog(t, root); got != "bootc switch quay.io/img:2\n" {
		t.Fatalf("commands run: %q", got)
	}
	// Without /run/ostree-booted and the ostree binary (TestKernelArgsMethodDetection has
	// the bootc host that has them), bootc alone has no command for kernel arguments.
	var nk *NoKargsMethodError
	if err := o.SetKernelArguments(t.Context(), nil, []string{"x"}); !errors.As(err, &nk) {
		t.Fatalf("kargs on a bootc-only host: %v", err)
	}
}

func TestOSTreeNeitherTool(t *testing.T) {
	o := NewOSTree(t.TempDir(), directRunner)
	err := o.Rebase(t.Context(), "quay.io/img:2")
	var nt *NoToolError
	if !errors.As(err, &nt) || !strings.Contains(err.Error(), "has neither /usr/bin/rpm-ostree nor /usr/bin/bootc") {
		t.Fatalf("Rebase without tools: %v", err)
	}
}

func TestOSTreeFailureCarriesOutput(t *testing.T) {
	root := t.TempDir()
	fakeTool(t, root, RPMOSTree, 1)
	err := NewOSTree(root, directRunner).SetKernelArguments(t.Context(), nil, []string{"x"})
	var ee *ExecError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "fake output") || !strings.Contains(err.Error(), "kargs --append-if-missing=x") {
		t.Fatalf("failed kargs: %v", err)
	}
}

func TestChrootRunnerAtSlashRunsDirectly(t *testing.T) {
	out, err := ChrootRunner(t.Context(), "/", "/bin/echo", "hi")
	if err != nil || strings.TrimSpace(string(out)) != "hi" {
		t.Fatalf("ChrootRunner(/) = %q, %v", out, err)
	}
}

// TestChrootRunnerRunsInsideTheRoot runs the real ChrootRunner, as the agent does in a
// DaemonSet pod: a static stand-in for rpm-ostree is built into a temporary root, and it
// must see the root's files as / and leave its log inside the root.
func TestChrootRunnerRunsInsideTheRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("chroot needs root (CAP_SYS_CHROOT): run this test as root, as CI does")
	}
	root := t.TempDir()
	bin := filepath.Join(root, toolPaths["rpm-ostree"])
	build := exec.Command("go", "build", "-o", bin, "./testdata/fakeostree")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the rpm-ostree stand-in: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "mcotui-test-root"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := NewOSTree(root, nil) // nil: the real ChrootRunner
	if err := o.SetKernelArguments(t.Context(), []string{"nosmt"}, []string{"mitigations=auto"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "log"))
	if err != nil {
		t.Fatalf("the stand-in left no log inside the root: %v", err)
	}
	if !strings.HasPrefix(string(got), "chrooted=true args=kargs ") || !strings.Contains(string(got), "mitigations=auto") {
		t.Fatalf("log = %q, want a chrooted kargs call", got)
	}
}
