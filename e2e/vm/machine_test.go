package vm

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The harness itself on a real guest: a boot, a command, a reboot from inside the guest
// (a new boot id, a synced file kept), a power cut and a power-on on the same disk, and
// a file read off the disk while the machine is off. It logs the times it measured.
func TestVMExtendedHarness(t *testing.T) {
	clusterObjects(t)
	began := time.Now()
	m := Start(t, Options{Node: "vm-harness", Binary: mcotuiBin, Kubeconfig: env.KubeconfigPath})
	t.Logf("first boot: %s", time.Since(began).Round(time.Second))
	ctx, cancel := m.Context()
	defer cancel()
	boot1 := m.Boots()[0]
	if got := m.Run(t, "readlink /home /usr/local /root; id -u core; echo kept >/var/lib/before-reboot; sync"); got != "var/home\n../var/usrlocal\nvar/roothome\n1000\n" {
		t.Fatalf("the guest's layout: %q", got)
	}
	if r, err := m.Exec(ctx, "echo out; echo err >&2; exit 3"); err != nil || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Code != 3 {
		t.Fatalf("exec: %+v, %v", r, err)
	}

	began = time.Now()
	if _, err := m.Exec(ctx, "systemctl reboot"); err != nil && !strings.Contains(err.Error(), "rebooted") {
		t.Logf("systemctl reboot: %v (the guest may go down before it answers)", err)
	}
	boot2, err := m.WaitBoot(ctx, boot1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reboot to the next boot id: %s", time.Since(began).Round(time.Second))
	if got := m.Run(t, "cat /var/lib/before-reboot; cat /proc/sys/kernel/random/boot_id"); got != "kept\n"+boot2+"\n" {
		t.Fatalf("after the reboot: %q, want the file kept and boot id %s", got, boot2)
	}

	m.Run(t, "printf synced >/var/lib/synced; sync")
	m.PowerCut()
	data, err := m.ReadFileOffline("/var/lib/synced")
	if err != nil || string(data) != "synced" {
		t.Fatalf("read off the disk after the power cut: %q, %v", data, err)
	}
	// The power-on after the cut meets an emulator that crashes before the guest boots
	// (as Debian's QEMU once did on CI): Boot powers on again and the guest boots once.
	crashed := false
	m.started = func(p *os.Process) {
		if !crashed {
			crashed = true
			_ = p.Signal(syscall.SIGSEGV)
		}
	}
	powerOns := m.powerOns
	began = time.Now()
	boot3 := m.Boot()
	t.Logf("power-on after the cut (one crashed QEMU) to the shell: %s", time.Since(began).Round(time.Second))
	if boot3 == boot2 || len(m.Boots()) != 3 || m.powerOns != powerOns+2 {
		t.Fatalf("boots %v, power-ons %d after %d: want one crashed and one booted", m.Boots(), m.powerOns, powerOns)
	}
	if got := m.Run(t, "cat /var/lib/synced"); got != "synced" {
		t.Fatalf("after the power cut: %q", got)
	}
}
