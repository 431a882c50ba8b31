package vm

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// guestFile is a file as the guest sees it.
type guestFile struct {
	data     string
	mode     int
	uid, gid int
	kind     string // stat's %F: "regular file", "symbolic link", ...
	exists   bool
}

// readGuestFile reads path in the guest, byte for byte, with its mode and owner.
func readGuestFile(t *testing.T, m *Machine, path string) guestFile {
	t.Helper()
	q := shellQuote(path)
	out := m.Run(t, fmt.Sprintf("if [ -e %s ] || [ -L %s ]; then stat -c '%%a %%u %%g %%F' %s; base64 -w0 %s 2>/dev/null; fi", q, q, q, q))
	if out == "" {
		return guestFile{}
	}
	head, b64, _ := strings.Cut(out, "\n")
	f := strings.SplitN(head, " ", 4)
	if len(f) != 4 {
		t.Fatalf("vm %s: stat %s: %q", m.Name(), path, head)
	}
	mode, _ := strconv.ParseInt(f[0], 8, 32)
	uid, _ := strconv.Atoi(f[1])
	gid, _ := strconv.Atoi(f[2])
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		t.Fatalf("vm %s: read %s: %v", m.Name(), path, err)
	}
	return guestFile{data: string(data), mode: int(mode), uid: uid, gid: gid, kind: f[3], exists: true}
}

// checkFiles reports how the guest's files differ from files (owned by root).
func checkFiles(t *testing.T, m *Machine, files []mctest.File) {
	t.Helper()
	for _, want := range files {
		got := readGuestFile(t, m, want.Path)
		if !got.exists || got.kind != "regular file" || got.data != want.Data || got.mode != want.Mode || got.uid != 0 {
			t.Errorf("vm %s: %s is %+v, want a regular file of root with mode %o and %q", m.Name(), want.Path, got, want.Mode, want.Data)
		}
	}
}

// The phases a MachineConfigNode must pass through, in this order, for an update that
// drains and reboots.
var rebootPhases = []struct {
	typ    mcfgv1.StateProgress
	status metav1.ConditionStatus
}{
	{phase.UpdatePrepared, metav1.ConditionTrue},
	{phase.UpdateExecuted, metav1.ConditionUnknown},
	{phase.Cordoned, metav1.ConditionTrue},
	{phase.Drained, metav1.ConditionUnknown},
	{phase.Drained, metav1.ConditionTrue},
	{phase.AppliedFilesAndOS, metav1.ConditionUnknown},
	{phase.AppliedFilesAndOS, metav1.ConditionTrue},
	{phase.UpdateExecuted, metav1.ConditionTrue},
	{phase.RebootedNode, metav1.ConditionUnknown},
	{phase.RebootedNode, metav1.ConditionTrue},
	{phase.UpdateComplete, metav1.ConditionTrue},
	{phase.Uncordoned, metav1.ConditionTrue},
	{phase.Resumed, metav1.ConditionTrue},
	{phase.Updated, metav1.ConditionTrue},
}

// Issue 10, test 1: a change of core's SSH keys (under the /home link), a file under
// /usr/local/bin (a link into /var), a new enabled unit, a drop-in on an existing unit,
// a masked unit and files with modes, under the Reboot policy: the agent cordons and
// drains the kwok node, writes, really reboots the guest, validates after boot,
// uncordons and reports Done.
func TestVMRebootUpdate(t *testing.T) {
	rebootUpdate(t, newNode(t, "vm-reboot"))
}

// rebootUpdate is test 1 on n's machine, however its agent runs (test 4 runs it as a
// DaemonSet pod would).
func rebootUpdate(t *testing.T, n *node) {
	m := n.m
	ctx, cancel := m.Context()
	defer cancel()
	n.runPod("web")
	boot1 := m.Boots()[0]
	if id, err := m.BootID(ctx); err != nil || id != boot1 {
		t.Fatalf("boot id %q (%v), the shell announced %q", id, err, boot1)
	}
	// The agent runs before the change: Done on the base config, nothing to do.
	awaitAgentActive(t, m)

	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	boot2, err := m.WaitBoot(ctx, boot1)
	if err != nil {
		t.Fatal(err)
	}
	rebootedAt := time.Now()
	n.awaitState(cfgReboot, nodeanno.StateDone)
	t.Logf("vm %s: desiredConfig to the next boot %s, to Done %s", n.name,
		rebootedAt.Sub(began).Round(time.Second), time.Since(began).Round(time.Second))

	if id, err := m.BootID(ctx); err != nil || id != boot2 || id == boot1 {
		t.Fatalf("boot id after the update %q (%v); before %q, announced %q", id, err, boot1, boot2)
	}
	if boots := m.Boots(); len(boots) != 2 {
		t.Errorf("boots %v: want exactly one reboot", boots)
	}

	checkFiles(t, m, rebootFiles)
	keys := readGuestFile(t, m, "/home/core/.ssh/authorized_keys.d/ignition")
	if keys.data != keyNew+"\n" || keys.mode != 0o600 || keys.uid != 1000 || keys.gid != 1000 {
		t.Errorf("core's keys: %+v", keys)
	}
	// The same file through the real path: the link was followed, not replaced.
	if got := m.Run(t, "stat -c %F /home; readlink /home; cat /var/home/core/.ssh/authorized_keys.d/ignition"); got != "symbolic link\nvar/home\n"+keyNew+"\n" {
		t.Errorf("/home after the update: %q", got)
	}
	if got := m.Run(t, "readlink /usr/local; ls -l /var/usrlocal/bin/mcotui-hello | cut -c1-10"); got != "../var/usrlocal\n-rwxr-xr-x\n" {
		t.Errorf("/usr/local after the update: %q", got)
	}
	if got := readGuestFile(t, m, "/var/lib/hello.marker"); strings.TrimSpace(got.data) != boot2 {
		t.Errorf("hello.service's marker %+v: want the boot id after the reboot, %s", got, boot2)
	}
	if got := m.Run(t, "systemctl is-enabled hello.service; systemctl is-active hello.service; systemctl is-enabled tobemasked.service || true"); got != "enabled\nactive\nmasked\n" {
		t.Errorf("is-enabled hello, is-active hello, is-enabled tobemasked: %q", got)
	}
	if got := m.Run(t, "systemctl show -p Environment --value example.service; systemctl show -p DropInPaths --value example.service"); !strings.Contains(got, "MCOTUI_DROPIN=from-config") || !strings.Contains(got, "/etc/systemd/system/example.service.d/10-mcotui.conf") {
		t.Errorf("example.service's drop-in is not in effect: %q", got)
	}

	node := n.get()
	if node.Spec.Unschedulable || !n.mcn.everCordoned() {
		t.Errorf("unschedulable now %t, ever %t: want cordoned during the update and uncordoned after", node.Spec.Unschedulable, n.mcn.everCordoned())
	}
	if left := n.pods(); len(left) != 0 {
		t.Errorf("pods left on the node: %v: the Reboot policy drains", left)
	}
	last := 0
	for _, p := range rebootPhases {
		at := n.mcn.seen(p.typ, p.status)
		if at == 0 {
			t.Errorf("MachineConfigNode %s never had %s=%s; seen:%s", n.name, p.typ, p.status, n.mcn)
			continue
		}
		if at < last {
			t.Errorf("MachineConfigNode %s: %s=%s came out of order; seen:%s", n.name, p.typ, p.status, n.mcn)
		}
		last = at
	}
	if c := n.condition(phase.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded = %+v", c)
	}
	if c := n.condition(phase.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %+v", c)
	}
}

// Issue 10, tests 2 and 5 on one machine (a boot costs half a minute or more): a
// file-only change under Reload and Restart policies reloads and restarts the units
// through real systemd, without a reboot or a drain; then a managed file changed by hand
// degrades the node, naming the file, until it is restored.
func TestVMExtendedReloadRestartAndDrift(t *testing.T) {
	n := newNode(t, "vm-reload")
	m := n.m
	ctx, cancel := m.Context()
	defer cancel()
	m.Run(t, `cat >/etc/systemd/system/restartme.service <<'EOF'
[Unit]
Description=a service the tests restart
[Service]
ExecStart=/bin/sh -c 'date +%s%N >>/run/restartme.started; exec sleep infinity'
EOF
systemctl daemon-reload && systemctl start restartme.service`)
	n.runPod("web")

	if !t.Run("ReloadRestart", func(t *testing.T) {
		boot1 := m.Boots()[0]
		before := m.Run(t, "systemctl show -p InvocationID --value restartme.service; systemctl show -p MainPID --value example.service; cat /run/example.reloaded 2>/dev/null | wc -l")
		n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReload})
		began := time.Now()
		n.awaitState(cfgReload, nodeanno.StateDone)
		t.Logf("vm %s: desiredConfig to Done %s", n.name, time.Since(began).Round(time.Second))
		after := m.Run(t, "systemctl show -p InvocationID --value restartme.service; systemctl show -p MainPID --value example.service; cat /run/example.reloaded 2>/dev/null | wc -l")
		b, a := strings.Fields(before), strings.Fields(after)
		if len(b) != 3 || len(a) != 3 {
			t.Fatalf("unit state before %q, after %q", before, after)
		}
		if a[0] == b[0] {
			t.Errorf("restartme.service's InvocationID %s did not change: not restarted", a[0])
		}
		if a[1] != b[1] {
			t.Errorf("example.service's MainPID went from %s to %s: restarted, not reloaded", b[1], a[1])
		}
		if a[2] != "1" || b[2] != "0" {
			t.Errorf("example.service's ExecReload ran %s times before, %s after: want 0, then 1", b[2], a[2])
		}
		if got := m.Run(t, "systemctl is-active restartme.service example.service"); got != "active\nactive\n" {
			t.Errorf("after the update: %q", got)
		}
		checkFiles(t, m, reloadFiles)
		if id, err := m.BootID(ctx); err != nil || id != boot1 || len(m.Boots()) != 1 {
			t.Errorf("boot id %q (%v), boots %v: want no reboot", id, err, m.Boots())
		}
		if n.mcn.everCordoned() || n.get().Spec.Unschedulable {
			t.Error("the node was cordoned: a Reload or Restart policy does not drain")
		}
		if pods := n.pods(); len(pods) != 1 {
			t.Errorf("pods %v: want web still running", pods)
		}
		if c := n.condition(phase.Drained); c.Message != "Node Drain Not required for this update." {
			t.Errorf("Drained = %+v", c)
		}
		// MCO names reloads in the condition and reports restarts only as events; the
		// condition is reset once the node is Updated, so the recorder's copy is read.
		if n.mcn.seen(phase.UpdatePostActionComplete, metav1.ConditionTrue) == 0 || !strings.Contains(n.mcn.message(phase.UpdatePostActionComplete, metav1.ConditionTrue), "example.service") {
			t.Errorf("UpdatePostActionComplete never True naming example.service; seen:%s", n.mcn)
		}
		if n.mcn.seen(phase.RebootedNode, metav1.ConditionUnknown) != 0 {
			t.Errorf("RebootedNode went Unknown (a reboot was asked for); seen:%s", n.mcn)
		}
	}) {
		return
	}

	t.Run("Drift", func(t *testing.T) {
		path := reloadDir + "/app.conf"
		m.Run(t, "printf 'changed by hand\\n' >"+path)
		n.m.Await(t, "the node Degraded by the drift", func() (bool, string) {
			node := n.get()
			return nodeanno.State(node) == nodeanno.StateDegraded && strings.Contains(nodeanno.Reason(node), path),
				fmt.Sprintf("annotations %v", node.Annotations)
		})
		if c := n.condition(phase.NodeDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, path) {
			t.Errorf("NodeDegraded = %+v: want True, naming %s", c, path)
		}
		m.Run(t, "printf 'reloaded=1\\n' >"+path)
		n.awaitState(cfgReload, nodeanno.StateDone)
		if c := n.condition(phase.NodeDegraded); c.Status != metav1.ConditionFalse {
			t.Errorf("NodeDegraded = %+v after the file was restored", c)
		}
		checkFiles(t, m, reloadFiles)
	})
}
