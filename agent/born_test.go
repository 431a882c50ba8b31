package agent

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-semver/semver"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// newBornNode is a kwok node that has just joined with born's files on its host and
// the node annotations file the config server served with them, and no mcotui
// annotation yet (the controller may have targeted it: desired).
func newBornNode(t *testing.T, name string, born *mcfgv1.MachineConfig, desired string) *liveNode {
	t.Helper()
	clusterObjects(t)
	ctx := kubetest.Context(t)
	name += "-" + strings.ToLower(rand.Text()[:5])
	if _, err := env.CreateNode(ctx, name, map[string]string{workerRole: ""}); err != nil {
		t.Fatal(err)
	}
	n := &liveNode{t: t, name: name, h: newHostEnv(t), boots: 1}
	n.h.layDown(t, born)
	served, err := firstboot.Serve(born, semver.Version{Major: 3, Minor: 5})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := v3_5.Parse(served)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cfg.Storage.Files {
		if f.Path == firstboot.NodeAnnotationsPath {
			data, err := ignconfig.Contents(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.h.root.WriteFile(f.Path, data, 0o644, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if desired != "" {
		n.patch(map[string]string{nodeanno.DesiredConfigKey: desired}, false)
	}
	ns, err := env.CreateNamespace(ctx, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	n.ns = ns
	return n
}

// A node born with its pool's config starts Done on it once targeted with it (at once,
// or after the agent started): the files are checked, nothing is journaled, drained or
// rebooted, and the node annotations file is retired.
func TestIntegrationBornWithItsConfigStartsDone(t *testing.T) {
	for _, desired := range []string{cfgA, ""} {
		t.Run("desired="+desired, func(t *testing.T) {
			n := newBornNode(t, "it-born", configA(t), desired)
			n.runPod("web", nil)
			stop, _ := n.start()
			if desired == "" {
				// Not yet targeted: the agent leaves the node unenrolled (it may not
				// write desiredConfig), which the controller counts as an available
				// candidate, and targets.
				n.setDesired(cfgA)
			}
			n.await("Done on A", doneOn(cfgA))
			n.await("the node annotations file retired", func(*corev1.Node) bool {
				_, errGone := n.h.root.Stat(firstboot.NodeAnnotationsPath)
				_, errBak := n.h.root.Stat(firstboot.NodeAnnotationsPath + ".bak")
				return errGone != nil && errBak == nil
			})
			kubetest.Eventually(t, time.Minute, "the MachineConfigNode to say Updated", func() (bool, string) {
				c := n.mcnCondition(phase.Updated)
				return c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
			})
			stop()
			if us, _ := n.h.journal.List(); len(us) != 0 {
				t.Errorf("journaled updates %+v: a node born with its config needs none", us)
			}
			if r := n.h.logind.Reboots(); r != 0 {
				t.Errorf("%d reboots", r)
			}
			if left := n.podsLeft(); len(left) != 1 {
				t.Errorf("pods %v: nothing may drain a node born with its config", left)
			}
			if node := n.get(); node.Spec.Unschedulable {
				t.Error("node cordoned")
			}
		})
	}
}

// A node born with an older config is updated from it as usual: file changes only, so
// a reload, no drain and no reboot, and the update is from the config it was born with.
func TestIntegrationBornWithAnOlderConfigIsUpdated(t *testing.T) {
	n := newBornNode(t, "it-born-old", configA(t), cfgB)
	n.runPod("web", nil)
	stop, _ := n.start()
	n.await("Done on B", doneOn(cfgB))
	stop()
	us, err := n.h.journal.List()
	if err != nil || len(us) != 1 || us[0].From != cfgA || us[0].To != cfgB {
		t.Fatalf("journal %+v (%v): want one update from A, the config the node was born with, to B", us, err)
	}
	if ms := n.h.mismatches(t, configB(t)); len(ms) > 0 {
		t.Fatalf("host differs from B: %s", describeMismatches(ms))
	}
	if n.h.logind.Reboots() != 0 || n.h.systemd.Reloads("example.service") != 1 {
		t.Errorf("reboots %d, reloads %d", n.h.logind.Reboots(), n.h.systemd.Reloads("example.service"))
	}
	if left := n.podsLeft(); len(left) != 1 {
		t.Errorf("pods %v: a reload must not drain", left)
	}
}

// A node born with its config whose files differ from it (changed after Ignition wrote
// them) is not reported current: the drift monitor says what differs, and once the
// file is put back the node starts Done.
func TestIntegrationBornWithDriftIsNotDone(t *testing.T) {
	n := newBornNode(t, "it-born-drift", configA(t), cfgA)
	writeHostFile(t, n.h.dir, "/etc/mcotui/a.conf", "a=edited\n", 0o644)
	stop, _ := n.start()
	n.await("drift reported", func(node *corev1.Node) bool {
		return nodeanno.State(node) == nodeanno.StateDegraded && strings.Contains(nodeanno.Reason(node), "/etc/mcotui/a.conf")
	})
	if cur := nodeanno.Current(n.get()); cur != "" {
		t.Errorf("currentConfig %q on a node whose files differ from its config", cur)
	}
	writeHostFile(t, n.h.dir, "/etc/mcotui/a.conf", "a=1\n", 0o644)
	n.await("Done on A once the file is back", doneOn(cfgA))
	stop()
	if us, _ := n.h.journal.List(); len(us) != 0 {
		t.Errorf("journaled updates %+v", us)
	}
}
