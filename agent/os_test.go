package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

// Kernel arguments and the OS image go through the host's rpm-ostree. Here it is a shell
// script under the temporary root that logs its arguments, and the OSTree runs it
// directly instead of chrooting into the root (which would need a whole userland
// there): what is tested is what the agent asks of rpm-ostree and when, not chroot.

func directRunner(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, name), args...)
	cmd.Env = append(os.Environ(), "FAKE_ROOT="+root)
	return cmd.CombinedOutput()
}

func installFakeRPMOSTree(t *testing.T, root string, exit int) {
	t.Helper()
	script := "#!/bin/sh\necho \"$*\" >> \"$FAKE_ROOT/rpm-ostree.log\"\n"
	if exit != 0 { // kargs fails; cleanup (the rollback) works
		script += "if [ \"$1\" = kargs ]; then echo 'error: Transaction in progress' >&2; exit 1; fi\n"
	}
	writeHostFile(t, root, "/usr/bin/rpm-ostree", script, 0o755)
}

func configOS(t *testing.T) *mcfgv1.MachineConfig {
	mc := configA(t)
	mc.Name = "rendered-worker-os"
	mc.Spec.KernelArguments = []string{"nosmt", "console=ttyS0"}
	mc.Spec.OSImageURL = "quay.io/fedora/fedora-coreos:next"
	return mc
}

func TestKernelArgumentsAndOSImageThroughRPMOSTree(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	installFakeRPMOSTree(t, s.h.dir, 0)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	want := "kargs --append-if-missing=nosmt --append-if-missing=console=ttyS0\n" +
		"rebase --experimental ostree-unverified-registry:quay.io/fedora/fedora-coreos:next\n"
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); got != want {
		t.Fatalf("rpm-ostree ran:\n%s\nwant:\n%s", got, want)
	}
	requireCondition(t, s.c, phase.AppliedFilesAndOS, metav1.ConditionTrue, "OS did need an update")
	s.boot("")
	s.run("", s.done)
}

func TestOSChangeWithoutToolsDegradesAndWritesNothing(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	before := snapshotTree(t, s.h.dir)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-os")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("wrote to the host:\n%s\n%s", before, after)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "the config changes the kernel arguments, which needs rpm-ostree on the host, and the host has neither /usr/bin/rpm-ostree nor /usr/bin/bootc") {
		t.Fatalf("reason %q", reason)
	}
}

func TestRPMOSTreeFailureRollsBack(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	installFakeRPMOSTree(t, s.h.dir, 1)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-os")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "Transaction in progress") || !strings.Contains(reason, "rolled back") {
		t.Fatalf("reason %q", reason)
	}
	s.requireFiles(configA(t))
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); !strings.HasSuffix(got, "cleanup -p\n") {
		t.Fatalf("rpm-ostree ran %q; the rollback drops the pending deployment", got)
	}
}
