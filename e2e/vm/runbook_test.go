package vm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// The runbooks of docs/runbooks, played on a real host: each test brings the node into the
// runbook's situation the way it happens in the field (a state filesystem that fills up, a
// config the agent must refuse, a journal damaged on disk), checks that the cluster shows
// what the runbook's "What you see" says, follows its "What to do" word for word, and checks
// that the node ends where the runbook says.

// stateImage is the small ext4 filesystem the full-disk test mounts at the agent's state
// directory (by /etc/fstab, so it is there again on the update's reboot): 16 MiB holds the
// journal and one update's snapshots with room to spare, and a filler fills it.
const (
	stateDir   = "/var/lib/mcotui"
	stateImage = "/var/mcotui-state.img"
	stateFill  = stateDir + "/filler"
)

// degradedWith waits until the node is Degraded on current, with NodeDegraded True and
// the reason annotation both containing want, and returns NodeDegraded's message.
func (n *node) degradedWith(current, want string) string {
	n.t.Helper()
	var msg string
	n.m.Await(n.t, fmt.Sprintf("node %s Degraded on %s with %q", n.name, current, want), func() (bool, string) {
		c := n.condition(phase.NodeDegraded)
		node := n.get()
		msg = c.Message
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want) &&
				nodeanno.State(node) == nodeanno.StateDegraded && nodeanno.Current(node) == current &&
				strings.Contains(nodeanno.Reason(node), want),
			fmt.Sprintf("NodeDegraded %s %q; annotations %v", c.Status, c.Message, node.Annotations)
	})
	return msg
}

// checkAbsent fails the test for each file of files that exists on the guest.
func checkAbsent(t *testing.T, m *Machine, files []mctest.File) {
	t.Helper()
	for _, f := range files {
		if got := readGuestFile(t, m, f.Path); got.exists {
			t.Errorf("%s exists on the host (%+v): the refused or failed update wrote it", f.Path, got)
		}
	}
}

// docs/runbooks/full-disk.md: the agent's state filesystem fills up before an update. The
// node is degraded with "no space left on device", never Updated, and the host keeps its
// files; once there is room and the runbook's annotation asks for another try, the update
// goes through (a reboot) and the node is Done on the new config.
func TestVMExtendedRunbookFullDisk(t *testing.T) {
	n := newNode(t, "vm-fulldisk", stuckOnPurpose)
	m := n.m
	awaitAgentActive(t, m)
	m.Run(t, `set -e
systemctl stop `+AgentUnit+`
truncate -s 16M `+stateImage+`
mkfs.ext4 -q -m 0 `+stateImage+`
mkdir -p /run/state-copy `+stateDir+` && mount -o loop `+stateImage+` /run/state-copy
cp -a `+stateDir+`/. /run/state-copy/ && umount /run/state-copy
echo '`+stateImage+` `+stateDir+` ext4 loop 0 2' >>/etc/fstab
systemctl daemon-reload && mount `+stateDir+`
dd if=/dev/zero of=`+stateFill+` bs=1k 2>/dev/null || true
sync
df -B1 --output=avail `+stateDir+` | tail -1 | grep -qx ' *0' || { df `+stateDir+`; exit 1; }
systemctl start `+AgentUnit)

	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	msg := n.degradedWith(cfgBase, "no space left on device")
	t.Logf("vm %s: desiredConfig to Degraded (no space) %s: %s", n.name, time.Since(began).Round(time.Second), msg)
	// The runbook's two endings: the journal cannot be written (the first update of this
	// agent creates it), or the snapshots before the update cannot.
	if !strings.Contains(msg, "journal "+stateDir+"/journal.db cannot be written") && !strings.Contains(msg, "Snapshot: ") {
		t.Errorf("NodeDegraded's message is neither of docs/runbooks/full-disk.md's:\n%s", msg)
	}
	if c := n.condition(phase.Updated); c.Status == metav1.ConditionTrue && strings.Contains(c.Message, cfgReboot) {
		t.Errorf("MachineConfigNode says Updated on %s while the agent could not record its work: %+v", cfgReboot, c)
	}
	checkAbsent(t, m, rebootFiles)
	if boots := m.Boots(); len(boots) != 1 {
		t.Errorf("boots %v: the node rebooted without room to record its update", boots)
	}

	// What to do: make room, then ask for the next try now.
	m.Run(t, "rm -f "+stateFill+" && sync")
	freed := time.Now()
	n.patch(map[string]string{nodeanno.StateKey: nodeanno.StateWorking})
	bootCtx, cancel := m.Context()
	_, err := m.WaitBoot(bootCtx, m.Boots()[0])
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgReboot, nodeanno.StateDone)
	t.Logf("vm %s: room made to Done on %s %s", n.name, cfgReboot, time.Since(freed).Round(time.Second))
	checkFiles(t, m, rebootFiles)
	if got := m.Run(t, "findmnt -n -o SOURCE "+stateDir+" >/dev/null && echo mounted"); got != "mounted\n" {
		t.Errorf("the state filesystem after the reboot: %q", got)
	}
	us := guestJournal(t, m)
	if len(us) == 0 || us[0].To != cfgReboot || us[0].Result != store.ResultDone {
		t.Errorf("the guest's journal, newest first: %+v, want the update to %s Done", us, cfgReboot)
	}
}

// cfgRefused is a config no agent may write: a file inside the agent's own state
// directory.
const cfgRefused = "rendered-worker-vmrefused"

// docs/runbooks/refused-config.md, case 2, with a power cut: the agent refuses the config
// in Prepare, before it cordons, evicts or writes anything; a power cut then, and the
// boot after it, change nothing (the refusal is reported again, the node never cordoned,
// its pod never evicted); the runbook's fix (desiredConfig back to a config of the pool)
// makes the node Done.
func TestVMExtendedRunbookRefusedConfigPowerCut(t *testing.T) {
	clusterObjects(t)
	refused := []mctest.File{
		{Path: "/etc/mcotui-vm/refused.conf", Data: "written=1\n", Mode: 0o644},
		{Path: stateDir + "/planted.conf", Data: "planted=1\n", Mode: 0o644},
	}
	createRendered(t, mctest.MachineConfig(t, cfgRefused, mctest.Config{Files: refused}))
	n := newNode(t, "vm-refused", stuckOnPurpose)
	m := n.m
	n.runPod("bystander")
	awaitAgentActive(t, m)

	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgRefused})
	want := "refusing the config " + cfgRefused + ", nothing was written"
	msg := n.degradedWith(cfgBase, want)
	if !strings.Contains(msg, stateDir+"/planted.conf") {
		t.Errorf("NodeDegraded does not name the refused path %s/planted.conf:\n%s", stateDir, msg)
	}

	refusals := func() int {
		c := 0
		for _, u := range guestJournal(t, m) {
			if u.To == cfgRefused && u.Result == store.ResultFailed {
				c++
			}
		}
		return c
	}
	before := refusals()
	m.PowerCut()
	boot2 := m.Boot()
	awaitAgentActive(t, m)
	// The agent refuses the config again on the new boot, as a new update of its
	// journal: the cut lost nothing it had recorded and made it skip nothing.
	m.Await(t, "a refusal recorded on the new boot", func() (bool, string) {
		got := refusals()
		return got > before, fmt.Sprintf("%d refusals of %s in the journal, %d before the cut", got, cfgRefused, before)
	})
	n.degradedWith(cfgBase, want)
	if n.mcn.everCordoned() {
		t.Error("the node was cordoned for a config the agent refuses")
	}
	if pods := n.pods(); len(pods) != 1 || pods[0] != "bystander" {
		t.Errorf("pods of the node: %v, want bystander still there", pods)
	}
	checkAbsent(t, m, refused)
	for _, u := range guestJournal(t, m) {
		if u.To == cfgRefused && u.Result != store.ResultFailed {
			t.Errorf("update %d to %s ended %q, want Failed", u.ID, u.To, u.Result)
		}
	}

	// What to do (3): desiredConfig back to the config the node runs.
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgBase})
	n.awaitState(cfgBase, nodeanno.StateDone)
	if got := m.Boots(); len(got) != 2 || got[1] != boot2 {
		t.Errorf("boots %v: want only the power-on after the cut", got)
	}
}

// docs/runbooks/damaged-journal.md: a byte of the journal flipped on disk. The agent
// refuses to act on it, reports the node Degraded naming the journal and the recovery,
// and `mcotui journal` says "is damaged"; the runbook's recovery (move the file aside,
// restart the agent) brings the node back, and it takes its next update.
func TestVMExtendedRunbookDamagedJournal(t *testing.T) {
	n := newNode(t, "vm-damaged", stuckOnPurpose)
	m := n.m
	awaitAgentActive(t, m)
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	bootCtx, cancel := m.Context()
	_, err := m.WaitBoot(bootCtx, m.Boots()[0])
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgReboot, nodeanno.StateDone)

	// Every copy of the config's name in the file changes one letter: the live record's
	// among them, so its checksum no longer matches.
	m.Run(t, `set -e
systemctl stop `+AgentUnit+`
f=`+stateDir+`/journal.db
n=0
for off in $(grep -boa `+cfgReboot+` "$f" | cut -d: -f1); do
	printf 'R' | dd of="$f" bs=1 seek="$off" conv=notrunc 2>/dev/null
	n=$((n+1))
done
[ "$n" -gt 0 ] || { echo "no record of `+cfgReboot+` in $f" >&2; exit 1; }
sync
systemctl start `+AgentUnit)
	msg := n.degradedWith(cfgReboot, "is damaged")
	for _, want := range []string{stateDir + "/journal.db", "mv " + stateDir + "/journal.db " + stateDir + "/journal.db.damaged"} {
		if !strings.Contains(msg, want) {
			t.Errorf("NodeDegraded's message lacks %q:\n%s", want, msg)
		}
	}
	if r, err := m.Exec(t.Context(), GuestBinary+" journal --state-dir "+stateDir); err != nil || r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "is damaged") {
		t.Errorf("mcotui journal on the damaged journal: %+v %v, want a failure saying \"is damaged\"", r, err)
	}

	// What to do: keep the file, let the agent start a new journal.
	m.Run(t, "mv "+stateDir+"/journal.db "+stateDir+"/journal.db.damaged && systemctl restart "+AgentUnit)
	n.awaitState(cfgReboot, nodeanno.StateDone)
	if c := n.condition(phase.NodeDegraded); c.Status == metav1.ConditionTrue {
		t.Errorf("NodeDegraded after the recovery: %+v", c)
	}
	checkFiles(t, m, rebootFiles)
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgBase})
	n.awaitState(cfgBase, nodeanno.StateDone)
	if got := m.Run(t, "test -e "+stateDir+"/journal.db.damaged && echo kept"); got != "kept\n" {
		t.Errorf("the damaged journal moved aside: %q, want it kept", got)
	}
}
