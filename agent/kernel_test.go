package agent

import (
	"errors"
	"os"
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

// Kernel type and extensions, through the rpm-ostree stand-in of os_test.go, and the
// checks of the booted OS after the reboot.

func configRT(t *testing.T) *mcfgv1.MachineConfig {
	mc := configA(t)
	mc.Name = "rendered-worker-rt"
	mc.Spec.KernelType = "realtime"
	mc.Spec.Extensions = []string{"usbguard", "kerberos"}
	mc.Spec.KernelArguments = []string{"nosmt"}
	return mc
}

// rpmOSTreeScenario is a node on configA with the rpm-ostree stand-in and a kernel
// command line file.
func rpmOSTreeScenario(t *testing.T, others ...*mcfgv1.MachineConfig) *scenario {
	s := newScenario(t, configA(t), others...)
	installFakeRPMOSTree(t, s.h.dir, 0)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.cmdline = filepath.Join(t.TempDir(), "cmdline")
	writeHostFile(t, filepath.Dir(s.cmdline), "cmdline", "BOOT_IMAGE=(hd0,gpt3)/boot/vmlinuz root=UUID=1 rw\n", 0o644)
	return s
}

// reboot is the node coming back: rpm-ostree boots the staged deployment, the kernel
// the command line given, the boot id changes.
func (s *scenario) rebootInto(cmdline string) {
	s.t.Helper()
	bootRPMOSTree(s.t, s.h.dir)
	writeHostFile(s.t, filepath.Dir(s.cmdline), "cmdline", cmdline+"\n", 0o644)
	s.boot("")
}

func (s *scenario) degradedWith(want string) {
	s.t.Helper()
	degraded := func() bool { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded }
	if ended := s.run("", degraded); ended != "until" {
		s.t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	if reason := s.c.annotation(nodeanno.ReasonKey); !strings.Contains(reason, want) {
		s.t.Fatalf("reason %q, want it to say %q", reason, want)
	}
}

func TestKernelTypeAndExtensionsThroughRPMOSTree(t *testing.T) {
	s := rpmOSTreeScenario(t, configRT(t))
	s.c.setDesired("rendered-worker-rt")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	want := "cleanup -p\n" +
		"kargs --append-if-missing=nosmt\n" +
		"override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra\n" +
		"update --install krb5-workstation --install libkadm5 --install usbguard\n"
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); got != want {
		t.Fatalf("rpm-ostree ran:\n%s\nwant:\n%s", got, want)
	}
	requireCondition(t, s.c, phase.AppliedFilesAndOS, metav1.ConditionTrue, "OS did need an update")
	s.rebootInto("BOOT_IMAGE=/vmlinuz-rt root=UUID=1 rw nosmt")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; reason %q", ended, s.c.annotation(nodeanno.ReasonKey))
	}

	// Back to the default kernel without extensions: the kernel swap is undone and
	// the extension packages go, in one staged deployment.
	writeHostFile(t, s.h.dir, "/rpm-ostree.log", "", 0o644)
	s.c.setDesired(cfgA)
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	want = "cleanup -p\n" +
		"kargs --delete-if-present=nosmt\n" +
		"override reset kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --uninstall kernel-rt-core --uninstall kernel-rt-modules --uninstall kernel-rt-modules-extra\n" +
		"update --uninstall krb5-workstation --uninstall libkadm5 --uninstall usbguard\n"
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); got != want {
		t.Fatalf("rpm-ostree ran:\n%s\nwant:\n%s", got, want)
	}
	s.rebootInto("BOOT_IMAGE=/vmlinuz root=UUID=1 rw")
	s.run("", s.done)
}

func TestKernelTypeWithoutRPMOSTreeDegradesAndWritesNothing(t *testing.T) {
	s := newScenario(t, configA(t), configRT(t))
	// bootc switches images but layers no packages.
	writeHostFile(t, s.h.dir, "/usr/bin/bootc", "#!/bin/sh\nexit 0\n", 0o755)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	before := snapshotTree(t, s.h.dir)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-rt")
	s.degradedWith("the config changes the kernel arguments, and the host has no way to change them")
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("wrote to the host:\n%s\n%s", before, after)
	}

	mc := configA(t)
	mc.Name = "rendered-worker-exts"
	mc.Spec.Extensions = []string{"sysstat"}
	s = newScenario(t, configA(t), mc)
	s.backoff = 1 << 40
	s.c.setDesired(mc.Name)
	s.degradedWith("the config changes the extensions, which needs rpm-ostree on the host, and the host has neither")
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "needs rpm-ostree")
}

func TestBadKernelTypeOrExtensionRefusedBeforeWriting(t *testing.T) {
	unknown := configA(t)
	unknown.Name = "rendered-worker-vim"
	unknown.Spec.Extensions = []string{"vim"}
	s := rpmOSTreeScenario(t, unknown)
	s.backoff = 1 << 40
	s.c.setDesired(unknown.Name)
	s.degradedWith("spec.extensions of rendered-worker-vim: unsupported extensions vim: the supported ones are ipsec")
	if _, err := os.Stat(filepath.Join(s.h.dir, "rpm-ostree.log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rpm-ostree ran (its log: %v)", err)
	}

	pages := configA(t)
	pages.Name = "rendered-worker-64k"
	pages.Spec.KernelType = "64k-pages"
	s = rpmOSTreeScenario(t, pages)
	s.backoff = 1 << 40
	s.arch = "amd64"
	s.c.setDesired(pages.Name)
	s.degradedWith("64k-pages is only supported on aarch64 (arm64) nodes, and this node is amd64")
}

func TestExtensionsNotStagedRollBack(t *testing.T) {
	s := rpmOSTreeScenario(t, configRT(t))
	writeHostFile(t, s.h.dir, "/drop-packages", "", 0o644)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-rt")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "the staged deployment lacks the extension packages krb5-workstation, libkadm5, usbguard") || !strings.Contains(reason, "rolled back") {
		t.Fatalf("reason %q", reason)
	}
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); !strings.HasSuffix(got, "cleanup -p\n") {
		t.Fatalf("rpm-ostree ran %q; the rollback drops the staged deployment", got)
	}
}

// After the reboot the node must run what the config says: the image, the kernel
// arguments, the packages. Each mismatch is named, the update stays open, the node
// degraded, until the host is put right; then the same update completes.
func TestBootedOSValidatedAfterReboot(t *testing.T) {
	s := rpmOSTreeScenario(t, configOS(t))
	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	// The reboot came, but not into the staged deployment, and the kernel was booted
	// without one of the arguments: each time, as the agent stages it again and
	// reboots (oslost.go), until it gives up.
	writeHostFile(t, filepath.Dir(s.cmdline), "cmdline", "root=UUID=1 rw console=ttyS0\n", 0o644)
	for retry := 1; retry <= maxOSRedeploys; retry++ {
		bootRPMOSTreeVerb(t, s.h.dir, "fake-boot-old")
		s.boot("")
		if ended := s.run("", nil); ended != "reboot" {
			t.Fatalf("retry %d: ended %s; journal %s", retry, ended, s.journalText())
		}
	}
	bootRPMOSTreeVerb(t, s.h.dir, "fake-boot-old")
	s.boot("")
	s.degradedWith("unexpected on-disk state validating against rendered-worker-os: " + s.cmdline +
		": the booted kernel command line lacks the config's kernel arguments nosmt; " +
		"spec.osImageURL: the node booted no container image (an ostree remote), the config says quay.io/fedora/fedora-coreos:next")
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "lacks the config's kernel arguments nosmt")
	if _, active, _ := s.h.journal.Active(); !active {
		t.Fatal("the update was closed; it stays open until the host matches")
	}
	// The runbook's fix: the image deployed by hand, then the reboot into it.
	if out, err := directRunner(t.Context(), s.h.dir, "/usr/bin/rpm-ostree", "rebase", "ostree-unverified-registry:"+newImage); err != nil {
		t.Fatalf("rebase by hand: %v: %s", err, out)
	}
	s.rebootInto("root=UUID=1 rw nosmt console=ttyS0")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; reason %q", ended, s.c.annotation(nodeanno.ReasonKey))
	}
}
