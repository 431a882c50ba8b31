package vm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/store"
)

// Issue 30: power cuts of the whole ostree-booted guest while the agent updates its OS
// image, staged before the drain as the rollout driver asks (nodeanno.StageImageKey).
// Each cut is a kill of QEMU: what the guest had not synced is lost, the staged
// deployment ostree keeps in /run with it.
//
// The cut points: the agent's failpoints where there is one; inside the rpm-ostree
// stand-in (its hold, between the download's objects and its ref); and inside
// ostree-finalize-staged at shutdown, through a grub.d script that holds the
// grub-mkconfig ostree runs while it writes the new boot entries (before it swaps the
// boot version, the step that makes the new deployment the one GRUB boots).

// The ostree guest's holds (e2e/vm/ostree/rpm-ostree's hold and finalizeHook): the
// test creates the file, the holder removes it durably, says so on the console and
// waits for the cut.
const (
	holdFile     = "/var/lib/mcotui-hold-"
	osRegistry   = "/var/lib/mcotui-osrepo"
	finalizeHook = "/etc/grub.d/01_mcotui_hold"
)

// finalizeHookScript runs inside grub-mkconfig, which ostree admin finalize-staged runs
// at shutdown once it has written the new deployment's boot entries. It prints nothing
// on its stdout (that would go into grub.cfg).
//
// It says on the console how many entries the boot version being written has (the one
// /boot/loader does not name yet): read at the cut, since after the power-on the agent
// stages again, and ostree's cleanup removes that unused boot version.
const finalizeHookScript = `#!/bin/sh
f=` + holdFile + `finalize
[ -e "$f" ] || exit 0
rm -f "$f"
sync
cur=$(readlink /boot/loader); n=none
for d in /boot/loader.0 /boot/loader.1; do [ "$d" = "/boot/$cur" ] || n=$(ls "$d/entries" 2>/dev/null | wc -l); done
echo "MCOTUI-HOLD finalize entries=$n" >/dev/ttyS0
while :; do sleep 3600; done
`

// moveToRegistry moves the ref of tag out of the guest's system repository into the
// stand-in's "registry" (osRegistry), so that staging the image is a real pull of the
// objects only that commit has.
func moveToRegistry(t *testing.T, m *Machine, tag string) {
	t.Helper()
	ref := "debian/" + tag
	m.Run(t, fmt.Sprintf(`set -e
ostree init --repo=%[1]s --mode=bare
ostree --repo=%[1]s pull-local /ostree/repo %[2]s
ostree refs --delete %[2]s
ostree prune --refs-only >/dev/null
sync`, osRegistry, ref))
	if out := m.Run(t, "ostree rev-parse "+ref+" 2>&1 || true"); !strings.Contains(out, "not found") {
		t.Fatalf("after moving %s out of the system repository: rev-parse says %q", ref, out)
	}
}

// stageOS asks the node to stage image, as the rollout driver does, and waits until the
// node says it staged it (and its MachineConfigNode says so too).
func stageOS(t *testing.T, n *node, image string) {
	t.Helper()
	n.patch(map[string]string{nodeanno.StageImageKey: image})
	awaitStaged(t, n, image)
}

func awaitStaged(t *testing.T, n *node, image string) {
	t.Helper()
	n.m.Await(t, "the node staged "+image, func() (bool, string) {
		node := n.get()
		c := n.condition(mcfgv1.MachineConfigNodeImagePulledFromRegistry)
		return nodeanno.StagedImage(node) == image && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, image),
			fmt.Sprintf("annotations %v; ImagePulledFromRegistry %s %q", node.Annotations, c.Status, c.Message)
	})
}

// awaitHold waits for the console line of the hold or failpoint re matches, and returns it.
func awaitHold(t *testing.T, m *Machine, re string) string {
	t.Helper()
	ctx, cancel := m.Context()
	defer cancel()
	line, err := m.WaitConsole(ctx, regexp.MustCompile(re+`\r?\n`))
	if err != nil {
		t.Fatalf("%s never announced: %v", re, err)
	}
	return line
}

// bootedDeployment is the booted line of `ostree admin status` ("* debian CSUM.N"),
// whether a deployment is staged, and the checksum of the ref debian/tag.
func bootedDeployment(t *testing.T, m *Machine, tag string) (booted string, staged bool, want string) {
	t.Helper()
	status := m.Run(t, "ostree admin status")
	for _, l := range strings.Split(status, "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "* debian "); ok {
			booted = strings.Fields(rest)[0]
		}
		if strings.Contains(l, "(staged)") {
			staged = true
		}
	}
	want = strings.TrimSpace(m.Run(t, "ostree rev-parse debian/"+tag))
	return booted, staged, want
}

// checkBooted fails t unless the guest booted the deployment of debian/tag (its
// checksum, its version file, rpm-ostree status's image) and nothing is staged.
func checkBooted(t *testing.T, m *Machine, tag, image string) {
	t.Helper()
	booted, staged, want := bootedDeployment(t, m, tag)
	if !strings.HasPrefix(booted, want+".") || staged {
		t.Errorf("ostree admin status: booted %q (staged one too: %t), want the commit of debian/%s %s:\n%s", booted, staged, tag, want, m.Run(t, "ostree admin status"))
	}
	if v := osVersion(t, m); v != tag {
		t.Errorf("the guest runs %q, want %s", v, tag)
	}
	if image != "" {
		st := m.Run(t, "rpm-ostree status --json")
		if !strings.Contains(st, `{"booted": true, "staged": false, "osname": "debian", "checksum": "`+want+`"`) || !strings.Contains(st, `"container-image-reference": "ostree-unverified-registry:`+image+`"`) {
			t.Errorf("rpm-ostree status --json: %s", st)
		}
	}
}

// checkOneUpdate fails t unless the guest's journal holds exactly one update, Done to
// cfg, with each phase once (nothing run twice from the start: drained, rebooted once).
func checkOneUpdate(t *testing.T, m *Machine, cfg string) {
	t.Helper()
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultDone || us[0].To != cfg {
		t.Fatalf("the journal: %+v, want one Done update to %s", us, cfg)
	}
	seen := map[string]bool{}
	for _, ph := range us[0].Phases {
		if seen[ph.Name] {
			t.Errorf("phase %s journaled twice: %+v", ph.Name, us[0].Phases)
		}
		seen[ph.Name] = true
	}
	for _, ph := range []string{"Drain", "Reboot"} {
		if !seen[ph] {
			t.Errorf("the update has no %s phase: %+v", ph, us[0].Phases)
		}
	}
}

// TestVMOSExtendedPowerCut (make test-vm): the power of the ostree guest is cut at each
// point of an OS image update staged before the drain; the guest boots the deployment
// the cut left, and the update ends as it must from there.
func TestVMOSExtendedPowerCut(t *testing.T) {
	t.Run("download", osCutDuringDownload)
	t.Run("staged", osCutAfterStaging)
	t.Run("drained", osCutBeforeReboot)
	t.Run("finalize", osCutDuringFinalize)
}

// osCutDuringDownload: the cut comes while the staging pull has fetched the objects but
// not written the ref. Staging is outside the journal: the agent stages again after the
// power-on, the pull skips the objects it has, and the update that follows is Done on
// the new deployment after one reboot.
func osCutDuringDownload(t *testing.T) {
	began := time.Now()
	n := ostreeNode(t, "vm-oscut-dl")
	m := n.m
	awaitAgentActive(t, m)
	moveToRegistry(t, m, "v2")
	m.Run(t, "touch "+holdFile+"download && sync")
	n.patch(map[string]string{nodeanno.StageImageKey: osImageV2})
	awaitHold(t, m, `MCOTUI-HOLD download`)
	m.PowerCut()
	cutAt := time.Now()
	boot2 := m.Boot()
	checkBooted(t, m, "v1", "")
	awaitStaged(t, n, osImageV2)
	if got := guestJournal(t, m); len(got) != 0 {
		t.Errorf("the journal after staging: %+v, want no update (staging is outside it)", got)
	}
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgOSv2})
	ctx, cancel := m.Context()
	defer cancel()
	boot3, err := m.WaitBoot(ctx, boot2)
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgOSv2, nodeanno.StateDone)
	t.Logf("vm %s: power cut during the download: cut to Done %s, whole test %s", n.name, time.Since(cutAt).Round(time.Second), time.Since(began).Round(time.Second))
	checkBooted(t, m, "v2", osImageV2)
	if boots := m.Boots(); len(boots) != 3 || boots[2] != boot3 {
		t.Errorf("boots %v: want the first, the power-on after the cut and the update's one reboot", boots)
	}
	checkOneUpdate(t, m, cfgOSv2)
	checkStageCleared(t, n)
}

// osCutAfterStaging: staged, then the update begins and the cut comes once the node is
// cordoned, before the drain. The power-on resumes the update from its journal, which
// deploys the download (still there: the stand-in synced it) and reboots once.
func osCutAfterStaging(t *testing.T) {
	osCutAtFailpoint(t, "vm-oscut-st", agent.FailAfterCordon)
}

// osCutBeforeReboot: drained and the deployment staged (ostree admin deploy --stage),
// the journal still at ApplyOS: the cut loses the staged deployment, which lives in
// /run until ostree-finalize-staged writes it at shutdown. The guest boots the old one;
// the resumed ApplyOS stages it again and the update reboots once into it.
func osCutBeforeReboot(t *testing.T) {
	osCutAtFailpoint(t, "vm-oscut-dr", agent.FailAfterOS)
}

func osCutAtFailpoint(t *testing.T, prefix, fp string) {
	began := time.Now()
	bin := failpointBinary(t)
	n := ostreeNode(t, prefix, func(o *Options) {
		o.Binary = bin
		o.AgentScript = armedOnce(o.Node, fp)
	})
	m := n.m
	awaitAgentActive(t, m)
	moveToRegistry(t, m, "v2")
	stageOS(t, n, osImageV2)
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgOSv2})
	awaitHold(t, m, `MCOTUI-FAILPOINT `+regexp.QuoteMeta(fp))
	m.PowerCut()
	cutAt := time.Now()
	boot2 := m.Boot()
	// The cut left the old deployment; nothing staged survives it.
	checkBooted(t, m, "v1", "")
	ctx, cancel := m.Context()
	defer cancel()
	boot3, err := m.WaitBoot(ctx, boot2)
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgOSv2, nodeanno.StateDone)
	t.Logf("vm %s: power cut at %s: cut to Done %s, whole test %s", n.name, fp, time.Since(cutAt).Round(time.Second), time.Since(began).Round(time.Second))
	checkBooted(t, m, "v2", osImageV2)
	if boots := m.Boots(); len(boots) != 3 || boots[2] != boot3 {
		t.Errorf("boots %v: want the first, the power-on after the cut and the update's one reboot", boots)
	}
	checkOneUpdate(t, m, cfgOSv2)
	checkStageCleared(t, n)
}

// osCutDuringFinalize: the update asked for its reboot, and the cut comes while
// ostree-finalize-staged writes the staged deployment at shutdown (held in its
// grub-mkconfig). ostree swaps the boot version last, so the guest boots the old
// deployment. The agent's journal says Reboot and the boot id is new: it validates the
// booted deployment, finds the old image, stages the image again (an OSDeploymentLost
// event, ApplyOS entered a second time) and reboots once more, into the new
// deployment: Done, never Done before that.
func osCutDuringFinalize(t *testing.T) {
	began := time.Now()
	n := ostreeNode(t, "vm-oscut-fin")
	m := n.m
	awaitAgentActive(t, m)
	moveToRegistry(t, m, "v2")
	stageOS(t, n, osImageV2)
	m.WriteFile(t, finalizeHook, []byte(finalizeHookScript), 0o755)
	m.Run(t, "touch "+holdFile+"finalize && sync")
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgOSv2})
	hold := awaitHold(t, m, `MCOTUI-HOLD finalize entries=\S+`)
	m.PowerCut()
	cutAt := time.Now()
	// The cut was inside the finalization: the next boot version's entries were written
	// (the staged deployment's and the booted one's), and /boot/loader still named the
	// old version (checkBooted: the old deployment boots).
	if !strings.HasSuffix(strings.TrimSpace(hold), "entries=2") {
		t.Errorf("at the cut, %q: want the 2 entries of the boot version ostree-finalize-staged was writing", strings.TrimSpace(hold))
	}
	boot2 := m.Boot()
	checkBooted(t, m, "v1", "")
	ctx, cancel := m.Context()
	defer cancel()
	boot3, err := m.WaitBoot(ctx, boot2)
	if err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfgOSv2, nodeanno.StateDone)
	t.Logf("vm %s: power cut during ostree-finalize-staged: cut to Done %s, whole test %s", n.name, time.Since(cutAt).Round(time.Second), time.Since(began).Round(time.Second))
	checkBooted(t, m, "v2", osImageV2)
	if boots := m.Boots(); len(boots) != 3 || boots[2] != boot3 {
		t.Errorf("boots %v: want the first, the power-on after the cut on the old deployment and the one reboot of the second try", boots)
	}
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultDone || us[0].To != cfgOSv2 {
		t.Fatalf("the journal: %+v, want one Done update to %s", us, cfgOSv2)
	}
	count := map[string]int{}
	for _, ph := range us[0].Phases {
		count[ph.Name]++
	}
	if count["ApplyOS"] != 2 || count["Reboot"] != 2 || count["Drain"] != 1 {
		t.Errorf("the update's phases %v: want ApplyOS and Reboot twice (the lost deployment staged again), Drain once", count)
	}
	checkStageCleared(t, n)
}

// checkStageCleared fails t unless the agent dropped the staging annotations once the
// node booted the image they named.
func checkStageCleared(t *testing.T, n *node) {
	t.Helper()
	n.m.Await(t, "the staging annotations cleared", func() (bool, string) {
		node := n.get()
		return nodeanno.StageImage(node) == "" && nodeanno.StagedImage(node) == "", fmt.Sprint(node.Annotations)
	})
}
