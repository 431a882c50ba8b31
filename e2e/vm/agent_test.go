package vm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// Issue 10's tests 3 (power cuts), 4 (DaemonSet mode) and 6 (a bad update rolled back).

// failpointBuild is the mcotui binary with the agent's failpoints (-tags failpoints),
// built once, when a power-cut test first needs it; TestMain removes it.
var failpointBuild builtBinary

type builtBinary struct {
	once sync.Once
	bin  string
	rm   func()
	err  error
}

func (b *builtBinary) cleanup() {
	if b.rm != nil {
		b.rm()
	}
}

func failpointBinary(t *testing.T) string {
	t.Helper()
	b := &failpointBuild
	b.once.Do(func() { b.bin, b.rm, b.err = BuildMcotui("failpoints") })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// guestConsole is where an armed agent announces its failpoint: the serial console,
// which the harness reads as QEMU prints it, with nothing in the guest synced.
const guestConsole = "/dev/ttyS0"

// armedOnce is the agent script of a power-cut test: the agent runs as a systemd unit
// would, armed with failpoint fp (the announce action) on the first boot only. The stamp
// that says it was armed is synced before the agent starts, long before the update
// reaches the failpoint; every later start (after the power cut, after the update's
// reboot) runs the agent unarmed, to resume.
func armedOnce(node, fp string) string {
	run := fmt.Sprintf("%s agent --node %s --root / --kubeconfig %s", GuestBinary, shellQuote(node), GuestKubeconf)
	return fmt.Sprintf(`#!/bin/sh
stamp=/var/lib/mcotui-failpoint-armed
if [ -e $stamp ]; then
	exec %s
fi
touch $stamp && sync
exec %s --failpoint %s --failpoint-announce %s
`, run, run, shellQuote(fp), guestConsole)
}

// diskPath is where path is on the root disk, through the layout's links into /var, for
// reading it offline.
func diskPath(p string) string {
	for link, target := range map[string]string{"/home/": "/var/home/", "/usr/local/": "/var/usrlocal/"} {
		if rest, ok := strings.CutPrefix(p, link); ok {
			return target + rest
		}
	}
	return p
}

// The failpoints a power cut is tried at: every one reached before the update's reboot,
// the two inside a file write among them. after-reboot is not: logind is already taking
// the guest down there, and a cut would race the reboot it is to follow. The rest come
// after the reboot, which test 1 covers.
var (
	powerCutPoints = []string{agent.FailWriteTemp, agent.FailBeforeReboot}
	// Extended: make test-vm only.
	powerCutPointsExtended = []string{
		agent.FailAfterBegin, agent.FailAfterCordon, agent.FailDuringDrain, agent.FailWriteRenamed,
		agent.FailAfterFile1, agent.FailAfterFile2, agent.FailAfterFiles, agent.FailAfterUnits,
	}
)

// Issue 10, test 3 (the part make test runs): a power cut at a failpoint, then the
// update resumes to Done.
func TestVMPowerCut(t *testing.T) {
	for _, fp := range powerCutPoints {
		t.Run(fp, func(t *testing.T) { powerCutAt(t, fp) })
	}
}

// Issue 10, test 3 (the rest, make test-vm).
func TestVMExtendedPowerCut(t *testing.T) {
	for _, fp := range powerCutPointsExtended {
		t.Run(fp, func(t *testing.T) { powerCutAt(t, fp) })
	}
}

// powerCutAt runs test 1's change on a new machine whose agent is armed at fp, cuts the
// power when it announces fp, checks on the disk that no file of the config is half
// written, boots again and waits for the update to end Done: files equal to the config
// byte for byte, exactly one reboot of the update, the journal readable and holding one
// Done update whose phases each appear once.
func powerCutAt(t *testing.T, fp string) {
	began := time.Now()
	bin := failpointBinary(t)
	n := newNode(t, "vm-cut-"+strings.ReplaceAll(fp, "-", ""), func(o *Options) {
		o.Binary = bin
		o.AgentScript = armedOnce(o.Node, fp)
	})
	m := n.m
	n.runPod("web")
	awaitAgentActive(t, m)
	paths := []string{"/home/core/.ssh/authorized_keys.d/ignition"}
	want := map[string]string{paths[0]: keyNew + "\n"}
	for _, f := range rebootFiles {
		paths = append(paths, f.Path)
		want[f.Path] = f.Data
	}
	before := map[string]guestFile{}
	for _, p := range paths {
		before[p] = readGuestFile(t, m, p)
	}

	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	waitCtx, cancelWait := m.Context()
	_, err := m.WaitConsole(waitCtx, regexp.MustCompile(`MCOTUI-FAILPOINT `+regexp.QuoteMeta(fp)+`\r?\n`))
	cancelWait()
	if err != nil {
		t.Fatalf("failpoint %s never announced: %v", fp, err)
	}
	m.PowerCut()
	cutAt := time.Now()

	// On the disk as the cut left it (its journal replayed, as the next mount will):
	// each file whole, old or new, never a mix.
	disk := make([]string, len(paths))
	for i, p := range paths {
		disk[i] = diskPath(p)
	}
	onDisk, err := m.ReadFilesOffline(disk...)
	if err != nil {
		t.Fatalf("after the cut at %s: %v", fp, err)
	}
	for i, p := range paths {
		data, ok := onDisk[disk[i]]
		switch {
		case !ok:
			if before[p].exists {
				t.Errorf("after the cut at %s: %s is gone; it held %q", fp, p, before[p].data)
			}
		case string(data) != want[p] && (!before[p].exists || string(data) != before[p].data):
			t.Errorf("after the cut at %s: %s holds %q: neither the old %q nor the config's %q", fp, p, data, before[p].data, want[p])
		}
	}

	// At before-reboot the journal holds the boot id being left: the power-on after the
	// cut is a new boot, and the update takes it for its reboot (the host runs the new
	// config from a fresh boot, as after the reboot it was about to ask for). Before that
	// point the update asks for its reboot after the cut.
	cutIsTheReboot := fp == agent.FailBeforeReboot
	boot2 := m.Boot()
	boot3 := boot2
	if !cutIsTheReboot {
		bootCtx, cancelBoot := m.Context()
		boot3, err = m.WaitBoot(bootCtx, boot2)
		cancelBoot()
		if err != nil {
			t.Fatal(err)
		}
	}
	n.awaitState(cfgReboot, nodeanno.StateDone)
	t.Logf("vm %s: power cut at %s: desired to cut %s, cut to Done %s, whole test %s", n.name, fp,
		cutAt.Sub(began).Round(time.Second), time.Since(cutAt).Round(time.Second), time.Since(began).Round(time.Second))

	// Boots: the first, the one after the cut, the one the update asked for (unless the
	// cut was its reboot); no more.
	if boots, want := m.Boots(), map[bool]int{false: 3, true: 2}[cutIsTheReboot]; len(boots) != want || boots[len(boots)-1] != boot3 {
		t.Errorf("boots %v: want the first, the power-on after the cut and exactly one reboot of the update (the cut's power-on being it: %t)", boots, cutIsTheReboot)
	}
	checkFiles(t, m, rebootFiles)
	if keys := readGuestFile(t, m, paths[0]); keys.data != want[paths[0]] || keys.mode != 0o600 || keys.uid != 1000 {
		t.Errorf("core's keys: %+v", keys)
	}
	if got := m.Run(t, "systemctl is-enabled tobemasked.service || true; cat /var/lib/hello.marker"); got != "masked\n"+boot3+"\n" {
		t.Errorf("after the update: is-enabled tobemasked and hello's marker: %q, want masked and %s", got, boot3)
	}
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultDone || us[0].To != cfgReboot {
		t.Fatalf("the journal after the cut at %s: %+v, want one Done update to %s", fp, us, cfgReboot)
	}
	seen := map[string]bool{}
	for _, ph := range us[0].Phases {
		if seen[ph.Name] {
			t.Errorf("phase %s journaled twice after the cut at %s: %+v", ph.Name, fp, us[0].Phases)
		}
		seen[ph.Name] = true
	}
	// The temporary file of a write the cut interrupted is taken by the resumed
	// update's write of the same file: none is left.
	if left := m.Run(t, "find /etc/mcotui-vm /var/usrlocal/bin /var/home/core/.ssh /etc/systemd/system -name '.*.mcotui-*' 2>/dev/null || true"); left != "" {
		t.Errorf("vm %s: temporary files left by the cut at %s: %s", n.name, fp, left)
	}
}

func awaitAgentActive(t *testing.T, m *Machine) {
	t.Helper()
	ctx, cancel := m.Context()
	defer cancel()
	m.Await(t, "the agent active", func() (bool, string) {
		r, err := m.Exec(ctx, "systemctl is-active "+AgentUnit)
		return err == nil && strings.TrimSpace(r.Stdout) == "active", fmt.Sprintf("%+v %v", r, err)
	})
}

// guestJournal is `mcotui journal -o json` in the guest: the agent's journal, read as an
// operator on the node reads it.
func guestJournal(t *testing.T, m *Machine) []store.Update {
	t.Helper()
	var us []store.Update
	out := m.Run(t, GuestBinary+" journal -o json")
	if err := json.Unmarshal([]byte(out), &us); err != nil {
		t.Fatalf("mcotui journal -o json in the guest: %v\n%s", err, out)
	}
	return us
}

// daemonSetScript runs the agent as a DaemonSet pod sees the host: in a mount namespace
// of its own, the host's root bind-mounted at /rootfs (a hostPath volume of /), and a /run
// of its own, so the host's bus is only at /rootfs/run/dbus/system_bus_socket. Nothing
// in the environment names the bus: the agent finds it under --root.
func daemonSetScript(node string) string {
	return fmt.Sprintf(`#!/bin/sh
unset DBUS_SYSTEM_BUS_ADDRESS
exec unshare --mount --propagation private /bin/sh -c '
set -e
mkdir -p /rootfs
mount --rbind / /rootfs
mount -t tmpfs -o mode=0755 pod-run /run
exec %s agent --node %s --root /rootfs --kubeconfig %s
'
`, GuestBinary, shellQuote(node), GuestKubeconf)
}

// Issue 10, test 4: test 1's change, with the agent in DaemonSet mode.
func TestVMDaemonSetMode(t *testing.T) {
	n := newNode(t, "vm-daemonset", func(o *Options) { o.AgentScript = daemonSetScript(o.Node) })
	m := n.m
	awaitAgentActive(t, m)
	// The agent is in a mount namespace of its own, and sees no bus at /run.
	ns := m.Run(t, "pid=$(systemctl show -p MainPID --value "+AgentUnit+"); readlink /proc/1/ns/mnt /proc/$pid/ns/mnt; "+
		"nsenter -t $pid -m sh -c 'test -e /run/dbus/system_bus_socket && echo bus at /run || echo no bus at /run; test -S /rootfs/run/dbus/system_bus_socket && echo bus at /rootfs/run'")
	lines := strings.Split(strings.TrimSpace(ns), "\n")
	if len(lines) != 4 || lines[0] == lines[1] || lines[2] != "no bus at /run" || lines[3] != "bus at /rootfs/run" {
		t.Fatalf("the agent's mount namespace is not a pod's: %q", ns)
	}
	rebootUpdate(t, n)
	log := m.Run(t, "journalctl -u "+AgentUnit+" -o cat --no-pager | grep 'agent starting' | tail -1")
	for _, want := range []string{"root=/rootfs", "stateDir=/rootfs/var/lib/mcotui", `bus="unix:path=/rootfs/run/dbus/system_bus_socket"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the agent's start line %q lacks %s", log, want)
		}
	}
	// The journal is the host's: readable on the host, at the default place.
	if us := guestJournal(t, m); len(us) != 1 || us[0].Result != store.ResultDone {
		t.Errorf("the host's journal: %+v", us)
	}
}

// cfgBad changes restartme.service's config to one it refuses to start with, under the
// Restart policy of restartDir, and adds a file beside it.
const cfgBad = "rendered-worker-vmbad"

// strictUnit is restartme.service for test 6: a oneshot that starts only with mode=good
// in its config, and says why it refuses otherwise, on stderr, into its journal.
const strictUnit = `[Unit]
Description=a service that refuses a bad config
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'grep -qx mode=good ` + restartDir + `/app.conf || { echo "strict: refusing $(cat ` + restartDir + `/app.conf) in ` + restartDir + `/app.conf" >&2; exit 1; }'
`

// Issue 10, test 6: a bad update under a Restart policy, its unit failing to start on
// it, is rolled back on the real host: the original files return, the unit runs again on
// them, and NodeDegraded names the unit and quotes its journal.
func TestVMBadUpdateRolledBack(t *testing.T) {
	clusterObjects(t)
	bad := mctest.MachineConfig(t, cfgBad, mctest.Config{Files: []mctest.File{
		{Path: restartDir + "/app.conf", Data: "mode=bad\n", Mode: 0o644},
		{Path: restartDir + "/extra.conf", Data: "extra=1\n", Mode: 0o644},
	}})
	createRendered(t, bad)
	n := newNode(t, "vm-rollback")
	m := n.m
	m.Run(t, "mkdir -p "+restartDir+" && printf 'mode=good\\n' >"+restartDir+"/app.conf && cat >/etc/systemd/system/restartme.service <<'EOF'\n"+strictUnit+"EOF\n"+
		"systemctl daemon-reload && systemctl start restartme.service")
	awaitAgentActive(t, m)

	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgBad})
	refusal := "strict: refusing mode=bad in " + restartDir + "/app.conf"
	var degraded metav1.Condition
	// The condition is written first, the annotation that sums it up last.
	m.Await(t, "NodeDegraded and the reason annotation naming restartme.service", func() (bool, string) {
		degraded = n.condition(phase.NodeDegraded)
		reason := nodeanno.Reason(n.get())
		return degraded.Status == metav1.ConditionTrue && strings.Contains(degraded.Message, "restartme.service") && strings.Contains(reason, "restartme.service"),
			fmt.Sprintf("%+v, reason %q", degraded, reason)
	})
	t.Logf("vm %s: desiredConfig to NodeDegraded %s", n.name, time.Since(began).Round(time.Second))
	for _, want := range []string{
		`restart unit restartme.service: systemd job result "failed"`,
		`its journal ends (journalctl -u restartme.service -n 5): `,
		fmt.Sprintf("%q", refusal),
		"everything the update wrote was rolled back; restartme.service restarted or reloaded with the original files",
	} {
		if !strings.Contains(degraded.Message, want) {
			t.Errorf("NodeDegraded's message lacks %q:\n%s", want, degraded.Message)
		}
	}

	// Back to the config the node runs: the agent stops retrying the bad one.
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgBase})
	n.awaitState(cfgBase, nodeanno.StateDone)
	if got := readGuestFile(t, m, restartDir+"/app.conf"); got.data != "mode=good\n" || got.mode != 0o644 {
		t.Errorf("%s/app.conf after the rollback: %+v, want the original", restartDir, got)
	}
	if got := readGuestFile(t, m, restartDir+"/extra.conf"); got.exists {
		t.Errorf("%s/extra.conf, which the bad update added, is still there: %+v", restartDir, got)
	}
	if got := m.Run(t, "systemctl is-active restartme.service || true"); got != "active\n" {
		t.Errorf("restartme.service after the rollback: %q, want active on the original config", got)
	}
	if boots := m.Boots(); len(boots) != 1 {
		t.Errorf("boots %v: a Restart policy does not reboot", boots)
	}
	us := guestJournal(t, m)
	if len(us) == 0 || us[0].Result != store.ResultFailed || !strings.Contains(us[0].Message, refusal) {
		t.Errorf("the guest's journal: %+v, want the update Failed quoting %q", us, refusal)
	}
	for _, u := range us {
		if u.Result != store.ResultFailed && u.Result != store.ResultSuperseded {
			t.Errorf("update %d to %s ended %s", u.ID, u.To, u.Result)
		}
	}
}
