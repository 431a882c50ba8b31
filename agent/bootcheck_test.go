package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

const cfgOSUnit = "rendered-worker-osunit"

// configOSUnit is configC (an enabled hello.service among its changes) on a new OS
// image.
func configOSUnit(t *testing.T) *mcfgv1.MachineConfig {
	mc := configC(t)
	mc.Name = cfgOSUnit
	mc.Spec.OSImageURL = "quay.io/fedora/fedora-coreos:next"
	return mc
}

// A boot into the new OS deployment on which a unit the config enables failed: the
// agent rolls the OS back (rpm-ostree rollback) and reboots; on the previous deployment
// it takes the update's files back, ends the update Failed and the node Degraded naming
// the unit, and does not begin the same update again.
func TestNewOSBootWithFailedUnitRollsBack(t *testing.T) {
	s := newScenario(t, configA(t), configOSUnit(t))
	installFakeRPMOSTree(t, s.h.dir, 0)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.c.setDesired(cfgOSUnit)
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	bootRPMOSTree(t, s.h.dir)
	s.h.systemd.SetUnitFailed("hello.service")
	s.boot("")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("after the boot into the new OS: ended %s; journal %s", ended, s.journalText())
	}
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); !strings.HasSuffix(got, "\nrollback\n") {
		t.Fatalf("rpm-ostree ran:\n%s\nwant a rollback last", got)
	}
	// A crash after the rollback, before the machine went down: the rerun does not
	// roll back twice (that would swap the deployments back).
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("rerun in the same boot: ended %s; journal %s", ended, s.journalText())
	}
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); strings.Count(got, "rollback\n") != 1 {
		t.Fatalf("rpm-ostree ran:\n%s\nwant one rollback", got)
	}
	bootRPMOSTree(t, s.h.dir)
	s.boot("")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) == 1 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("after the rollback's boot: ended %s; journal %s", ended, s.journalText())
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	for _, want := range []string{"hello.service is failed", "quay.io/fedora/fedora-coreos:next", "rolled back to its previous OS deployment", "everything the update wrote was rolled back"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q lacks %q", reason, want)
		}
	}
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "hello.service is failed")
	s.requireFiles(configA(t))
	if cur := s.c.annotation(nodeanno.CurrentConfigKey); cur != cfgA {
		t.Errorf("current config %s, want %s", cur, cfgA)
	}
	booted, _, err := s.h.os.Deployments(t.Context())
	if err != nil || booted.Image != "" {
		t.Errorf("booted %+v, %v: want the previous deployment (no image)", booted, err)
	}
	var phases []string
	for _, p := range s.lastUpdate().Phases {
		phases = append(phases, p.Name)
	}
	if got := strings.Join(phases, " "); !strings.HasSuffix(got, "Reboot Rebooted Validate BootCheck Rollback") {
		t.Errorf("phases %s", got)
	}
	// The same desired config is not tried again: it would boot the same OS.
	// (Bounded: a sync that began the update again would wait in its reboot forever.)
	a := s.agent("")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if again, err := a.sync(ctx); again || err != nil {
		t.Errorf("sync after the failed boot: again %t, %v", again, err)
	}
	if us, _ := s.h.journal.List(); len(us) != 1 {
		t.Errorf("journal %s: want no new update", s.journalText())
	}
}
