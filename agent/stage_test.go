package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

const (
	oldImage = "quay.io/fedora/fedora-coreos:stable"
	newImage = "quay.io/fedora/fedora-coreos:next" // configOS's
)

// stagingScenario is a node on configA, booted from oldImage through the rpm-ostree
// stand-in, asked to stage configOS's image.
func stagingScenario(t *testing.T) *scenario {
	s := newScenario(t, configA(t), configOS(t))
	installFakeRPMOSTree(t, s.h.dir, 0)
	writeHostFile(t, s.h.dir, "/.ostree/booted-image", oldImage+"\n", 0o644)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	_ = s.c.Annotate(t.Context(), map[string]string{nodeanno.StageImageKey: newImage})
	s.c.notify()
	return s
}

func (s *scenario) staged() bool { return s.c.annotation(nodeanno.StagedImageKey) == newImage }

func TestStagedBeforeTheDrainDeployedFromTheDownload(t *testing.T) {
	s := stagingScenario(t)
	if ended := s.run("", s.staged); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	// Staged while the node runs its pods: not cordoned, still Updated, not Working.
	if s.c.unschedulable() || s.c.annotation(nodeanno.StateKey) != nodeanno.StateDone {
		t.Fatalf("staging touched the node: unschedulable %t, state %s", s.c.unschedulable(), s.c.annotation(nodeanno.StateKey))
	}
	requireCondition(t, s.c, phase.Updated, metav1.ConditionTrue, "Updated")
	requireCondition(t, s.c, phase.ImagePulledFromRegistry, metav1.ConditionTrue, "Staged OS image "+newImage+" before the drain (2 layers, 10.0 MB)")
	if got, want := readHostFile(t, s.h.dir, "/rpm-ostree.log"), "rebase --experimental --download-only ostree-unverified-registry:"+newImage+"\n"; got != want {
		t.Fatalf("rpm-ostree ran %q, want %q", got, want)
	}

	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	want := "rebase --experimental --download-only ostree-unverified-registry:" + newImage + "\n" +
		"kargs --append-if-missing=nosmt --append-if-missing=console=ttyS0\n" +
		"rebase --experimental --cache-only ostree-unverified-registry:" + newImage + "\n"
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); got != want {
		t.Fatalf("rpm-ostree ran:\n%s\nwant:\n%s", got, want)
	}
	if s.lastUpdateDigest() == "" {
		t.Fatal("the staged deployment's digest was not journaled before the reboot")
	}
	bootRPMOSTree(t, s.h.dir)
	s.boot("")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if v, ok := s.c.node.Annotations[nodeanno.StagedImageKey]; ok {
		t.Fatalf("the node still says %s staged after it booted it", v)
	}
}

func (s *scenario) lastUpdateDigest() string {
	s.t.Helper()
	u, active, err := s.h.journal.Active()
	if err != nil || !active {
		s.t.Fatalf("no active update: %v", err)
	}
	p, err := decodePlan(u.Data)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.OSDigest
}

func TestStagingFailureIsRetriedAndDegradesNothing(t *testing.T) {
	s := stagingScenario(t)
	writeHostFile(t, s.h.dir, "/fail-download", "", 0o644)
	retried := func() bool {
		return strings.Contains(s.c.condition(phase.ImagePulledFromRegistry).Message, "(attempt 2, retrying")
	}
	if ended := s.run("", retried); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	c := s.c.condition(phase.ImagePulledFromRegistry)
	if c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, "connection reset by peer") || !strings.Contains(c.Message, newImage) {
		t.Fatalf("ImagePulledFromRegistry = %s %q", c.Status, c.Message)
	}
	if st := s.c.annotation(nodeanno.StateKey); st != nodeanno.StateDone || s.c.condition(phase.NodeDegraded).Status == metav1.ConditionTrue {
		t.Fatalf("a failed download degraded the node: state %s", st)
	}
	if s.c.eventReasons()["OSImagePullFailed"] == 0 {
		t.Fatal("no OSImagePullFailed event")
	}
	removeHostFile(t, s.h.dir, "/fail-download")
	if ended := s.run("", s.staged); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
}

// A node whose staged deployment was lost before the reboot (a power cut while ostree
// finalized it) boots its previous deployment: the update is not Done. The agent stages
// the image again and reboots, twice, each a new agent process that reads the count
// from the journal, then stays degraded naming what it booted, what was expected and
// the runbook.
func TestBootedPreviousDeploymentRetriedThenDegradesNamingBoth(t *testing.T) {
	s := stagingScenario(t)
	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	for retry := 1; retry <= maxOSRedeploys; retry++ {
		bootRPMOSTreeVerb(t, s.h.dir, "fake-boot-old")
		s.boot("")
		if ended := s.run("", nil); ended != "reboot" {
			t.Fatalf("retry %d: ended %s, want another reboot; journal %s", retry, ended, s.journalText())
		}
		if got := s.c.eventReasons()["OSDeploymentLost"]; got != retry {
			t.Fatalf("retry %d: %d OSDeploymentLost events", retry, got)
		}
		if got, want := deploys(t, s.h.dir), retry+1; got != want {
			t.Fatalf("retry %d: the image was deployed %d times, want %d:\n%s", retry, got, want, readHostFile(t, s.h.dir, "/rpm-ostree.log"))
		}
		if st := s.c.annotation(nodeanno.StateKey); st == nodeanno.StateDegraded {
			t.Fatalf("retry %d: degraded while retrying: %s", retry, s.c.annotation(nodeanno.ReasonKey))
		}
	}
	bootRPMOSTreeVerb(t, s.h.dir, "fake-boot-old")
	s.boot("")
	s.degradedWith("the node booted " + oldImage + " (digest sha256:")
	reason := s.c.annotation(nodeanno.ReasonKey)
	for _, want := range []string{"the config says " + newImage + " (digest sha256:", "staged and rebooted 2 more times", "os-deployment-lost.md"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("reason %q does not say %q", reason, want)
		}
	}
	if s.c.annotation(nodeanno.CurrentConfigKey) == "rendered-worker-os" {
		t.Fatal("the node was marked as running the config it did not boot")
	}
	if s.h.logind.Reboots() != 1+maxOSRedeploys {
		t.Fatalf("%d reboots, want %d", s.h.logind.Reboots(), 1+maxOSRedeploys)
	}
	// The agent restarted (a crash, an upgrade of its pod) does not start counting again.
	if ended := s.run("", func() bool { return s.c.eventReasons()["UpdateFailed"] >= 2 }); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	if s.h.logind.Reboots() != 1+maxOSRedeploys {
		t.Fatalf("a restarted agent rebooted again: %d reboots", s.h.logind.Reboots())
	}
}

// deploys counts the rebases that deployed an image (not the downloads).
func deploys(t *testing.T, root string) int {
	n := 0
	for _, l := range strings.Split(readHostFile(t, root, "/rpm-ostree.log"), "\n") {
		if strings.HasPrefix(l, "rebase ") && !strings.Contains(l, "--download-only") {
			n++
		}
	}
	return n
}

// The second boot comes up on the new deployment: the update completes.
func TestBootedPreviousDeploymentOnceThenDone(t *testing.T) {
	s := stagingScenario(t)
	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	bootRPMOSTreeVerb(t, s.h.dir, "fake-boot-old")
	s.boot("")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s, want another reboot; journal %s", ended, s.journalText())
	}
	bootRPMOSTree(t, s.h.dir)
	s.boot("")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	us, err := s.h.journal.List()
	if err != nil {
		t.Fatal(err)
	}
	if last := us[len(us)-1]; osRedeploys(last) != 1 || last.Result != store.ResultDone {
		t.Fatalf("last update %s with %d redeploys, want Done with 1; journal %s", last.Result, osRedeploys(last), s.journalText())
	}
}

func TestImageMismatchByDigest(t *testing.T) {
	const pinned = "quay.io/fcos@sha256:aaaa"
	for _, tc := range []struct {
		name         string
		booted       host.Deployment
		want, digest string
		mismatch     bool
	}{
		{"same image, no digests", host.Deployment{Image: "quay.io/a:1"}, "quay.io/a:1", "", false},
		{"same tag, the staged digest", host.Deployment{Image: "quay.io/a:1", Digest: "sha256:02"}, "quay.io/a:1", "sha256:02", false},
		{"same tag, another digest: the previous deployment", host.Deployment{Image: "quay.io/a:1", Digest: "sha256:01"}, "quay.io/a:1", "sha256:02", true},
		{"pinned, booted it", host.Deployment{Image: pinned, Digest: "sha256:aaaa"}, pinned, "", false},
		{"pinned, booted another digest", host.Deployment{Image: pinned, Digest: "sha256:bbbb"}, pinned, "", true},
		{"another image", host.Deployment{Image: "quay.io/a:0"}, "quay.io/a:1", "", true},
	} {
		got := imageMismatch(&tc.booted, tc.want, tc.digest)
		if (got != "") != tc.mismatch {
			t.Errorf("%s: imageMismatch = %q, want mismatch %t", tc.name, got, tc.mismatch)
		}
	}
}

func removeHostFile(t *testing.T, root, p string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}
