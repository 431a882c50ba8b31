package vm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/store"
)

// Issue 30, item 5: kernel arguments on a conventional host that boots through GRUB
// (hack/vmimage.sh DIR grub: QEMU boots the disk's own GRUB, no -kernel). The agent
// finds update-grub and /etc/default/grub there, keeps the config's arguments in its
// drop-in /etc/default/grub.d/60-mcotui.cfg, runs update-grub, and reboots; the
// arguments are then in /proc/cmdline, which the agent checks before it says Done.

const (
	cfgKargsTwo = "rendered-worker-vmkargs2" // adds kargsTwo
	cfgKargsOne = "rendered-worker-vmkargs1" // keeps kargsTwo[0], removes kargsTwo[1]
)

var kargsTwo = []string{"mcotui.vmtest=1", "mcotui.second=two"}

// createKargsConfigs creates the kernel-argument configs (a second call finds them).
func createKargsConfigs(t *testing.T) {
	t.Helper()
	clusterObjects(t)
	two := mctest.MachineConfig(t, cfgKargsTwo, mctest.Config{})
	two.Spec.KernelArguments = kargsTwo
	one := mctest.MachineConfig(t, cfgKargsOne, mctest.Config{})
	one.Spec.KernelArguments = kargsTwo[:1]
	createRendered(t, two)
	createRendered(t, one)
}

// diskBootStall is the silence a guest that boots through GRUB may keep: GRUB reads
// the kernel and the initrd (about 30 MB) through the BIOS, which under TCG on a loaded
// machine took more than the default 4 minutes with nothing on the console (GRUB
// prints "Loading initial ramdisk ..." and nothing more until the kernel starts).
const diskBootStall = 10 * time.Minute

// grubNode is newNode on the GRUB-booted image.
func grubNode(t *testing.T, prefix string, opts ...func(*Options)) *node {
	t.Helper()
	img, err := FindGRUBImage()
	if err != nil {
		t.Fatal(err)
	}
	createKargsConfigs(t)
	return newNode(t, prefix, append([]func(*Options){func(o *Options) {
		o.Image = img
		o.StallTimeout = diskBootStall
	}}, opts...)...)
}

// kargsCount is how many times each of args is in the guest's /proc/cmdline, as a
// whole word.
func kargsCount(t *testing.T, m *Machine, args []string) map[string]int {
	t.Helper()
	words := strings.Fields(m.Run(t, "cat /proc/cmdline"))
	out := map[string]int{}
	for _, a := range args {
		for _, w := range words {
			if w == a {
				out[a]++
			}
		}
	}
	return out
}

// checkKargs fails t unless each of want is in /proc/cmdline exactly once and each of
// gone is not there, and the agent's drop-in and grub.cfg's menu entry hold want once.
func checkKargs(t *testing.T, m *Machine, want, gone []string) {
	t.Helper()
	counts := kargsCount(t, m, append(append([]string{}, want...), gone...))
	for _, a := range want {
		if counts[a] != 1 {
			t.Errorf("/proc/cmdline has %s %d times, want once: %s", a, counts[a], m.Run(t, "cat /proc/cmdline"))
		}
	}
	for _, a := range gone {
		if counts[a] != 0 {
			t.Errorf("/proc/cmdline still has %s: %s", a, m.Run(t, "cat /proc/cmdline"))
		}
	}
	dropIn := m.Run(t, "cat /etc/default/grub.d/60-mcotui.cfg")
	if first, _, _ := strings.Cut(dropIn, "\n"); first != `# mcotui kernel arguments: ["`+strings.Join(want, `","`)+`"]` {
		t.Errorf("the agent's GRUB drop-in: %q", dropIn)
	}
	// The first menu entry's linux line, as grub-mkconfig wrote it.
	linux := m.Run(t, `grep -m1 -E '^\s*linux\s' /boot/grub/grub.cfg`)
	for _, a := range want {
		if n := strings.Count(" "+strings.TrimSpace(linux)+" ", " "+a+" "); n != 1 {
			t.Errorf("grub.cfg's linux line has %s %d times: %s", a, n, linux)
		}
	}
}

// TestVMKernelArgsGRUB (make test): two kernel arguments added on a GRUB-booted host
// land in /proc/cmdline after the agent's one reboot, once each.
func TestVMKernelArgsGRUB(t *testing.T) {
	began := time.Now()
	n := grubNode(t, "vm-kargs")
	m := n.m
	// The agent publishes how the host changes kernel arguments at its first look at
	// the Node: what the rollout plan names.
	m.Await(t, "the agent's kernel-argument method on the Node", func() (bool, string) {
		got := n.get().Annotations[nodeanno.KernelArgsMethodKey]
		return got == "grub", got
	})
	checked := time.Now()
	boot1 := m.Boots()[0]
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgKargsTwo})
	ctx, cancel := m.Context()
	defer cancel()
	if _, err := m.WaitBoot(ctx, boot1); err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgKargsTwo, nodeanno.StateDone)
	t.Logf("vm %s: boot %s, desiredConfig to Done %s, whole test %s", n.name,
		checked.Sub(began).Round(time.Second), time.Since(checked).Round(time.Second), time.Since(began).Round(time.Second))
	checkKargs(t, m, kargsTwo, nil)
	if boots := m.Boots(); len(boots) != 2 {
		t.Errorf("boots %v: want exactly one reboot", boots)
	}
}

// TestVMExtendedKernelArgsGRUBPowerCut (make test-vm): the power is cut right after the
// agent set the kernel arguments (update-grub done, the journal still at ApplyOS); the
// rerun after the power-on sets them again, and the node boots with each argument
// once. Then the next config removes one of them.
func TestVMExtendedKernelArgsGRUBPowerCut(t *testing.T) {
	began := time.Now()
	fp := agent.FailAfterOS
	bin := failpointBinary(t)
	n := grubNode(t, "vm-kargs-cut", func(o *Options) {
		o.Binary = bin
		o.AgentScript = armedOnce(o.Node, fp)
	})
	m := n.m
	awaitAgentActive(t, m)
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgKargsTwo})
	waitCtx, cancelWait := m.Context()
	_, err := m.WaitConsole(waitCtx, regexp.MustCompile(`MCOTUI-FAILPOINT `+regexp.QuoteMeta(fp)+`\r?\n`))
	cancelWait()
	if err != nil {
		t.Fatal(err)
	}
	m.PowerCut()
	cutAt := time.Now()
	boot2 := m.Boot()
	ctx, cancel := m.Context()
	defer cancel()
	boot3, err := m.WaitBoot(ctx, boot2)
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgKargsTwo, nodeanno.StateDone)
	t.Logf("vm %s: power cut at %s: cut to Done %s", n.name, fp, time.Since(cutAt).Round(time.Second))
	checkKargs(t, m, kargsTwo, nil)
	if boots := m.Boots(); len(boots) != 3 || boots[2] != boot3 {
		t.Errorf("boots %v: want the first, the power-on after the cut and the update's one reboot", boots)
	}
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultDone || us[0].To != cfgKargsTwo {
		t.Fatalf("the journal after the cut: %+v, want one Done update to %s", us, cfgKargsTwo)
	}

	removedAt := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgKargsOne})
	// The next boot after boot3: WaitBoot takes any other boot of this power-on, and
	// boot2 is one.
	m.Await(t, "the reboot that removes an argument", func() (bool, string) {
		boots := m.Boots()
		return len(boots) == 4, fmt.Sprint(boots)
	})
	n.awaitState(cfgKargsOne, nodeanno.StateDone)
	t.Logf("vm %s: removing one argument: desiredConfig to Done %s; whole test %s", n.name,
		time.Since(removedAt).Round(time.Second), time.Since(began).Round(time.Second))
	checkKargs(t, m, kargsTwo[:1], kargsTwo[1:])
}
