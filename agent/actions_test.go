package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

// restartPolicy: files under /etc/mcotui restart example.service.
func restartPolicy() disruption.Policy {
	return disruption.Merge(disruption.DefaultPolicy(), operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{{
			Path: "/etc/mcotui",
			Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
				Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "example.service"},
			}},
		}},
	})
}

// fakeJournal is what the fake journalctl prints for the unit: its own last words, then
// systemd's, as `journalctl -u example.service -o cat` does on Debian's systemd 252.
const fakeJournal = `example: bad value a=2 in /etc/mcotui/a.conf
example.service: Main process exited, code=exited, status=1/FAILURE
example.service: Failed with result 'exit-code'.
Failed to start example.service - Example.
`

// installFakeJournalctl puts a journalctl under root that logs its arguments and prints
// fakeJournal.
func installFakeJournalctl(t *testing.T, root string) {
	t.Helper()
	script := "#!/bin/sh\necho \"$*\" >> \"$FAKE_ROOT/journalctl.log\"\n[ \"$1\" = --sync ] && exit 0\ncat <<'END'\n" + fakeJournal + "END\n"
	p := filepath.Join(root, host.JournalctlPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// unitLogThen runs then after each read of a journal: the test's moment to mend the
// unit, as the original files do on a real host.
type unitLogThen struct {
	UnitLogger
	then func()
}

func (u unitLogThen) Tail(ctx context.Context, unit string, n int) ([]string, error) {
	lines, err := u.UnitLogger.Tail(ctx, unit, n)
	u.then()
	return lines, err
}

func failedAndDegraded(s *scenario) func() bool {
	return func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
}

// TestFailedRestartRollsBackNamingTheUnit: a restart whose job fails rolls the files
// back, restarts the unit again on the originals, and NodeDegraded names the unit and
// quotes its journal, read with the host's journalctl.
func TestFailedRestartRollsBackNamingTheUnit(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	s.c.policy = restartPolicy()
	s.backoff = 1 << 40
	installFakeJournalctl(t, s.h.dir)
	s.h.systemd.SetJobResult("RestartUnit", "example.service", "failed")
	s.unitLog = unitLogThen{host.NewUnitLog(s.h.dir, directRunner), func() {
		s.h.systemd.SetJobResult("RestartUnit", "example.service", "done")
	}}
	s.c.setDesired(cfgB)
	if ended := s.run("", failedAndDegraded(s)); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	s.requireFiles(configA(t))
	if _, err := os.Stat(filepath.Join(s.h.dir, "etc/mcotui/c.conf")); !os.IsNotExist(err) {
		t.Fatalf("the file the update added is still there: %v", err)
	}
	if got := s.h.systemd.Restarts("example.service"); got != 2 {
		t.Fatalf("example.service restarted %d times, want 2: on the new files, then on the originals", got)
	}
	for _, want := range []string{
		`restart unit example.service: systemd job result "failed"`,
		`its journal ends (journalctl -u example.service -n 5): "example: bad value a=2 in /etc/mcotui/a.conf" | `,
		`"Failed to start example.service - Example."`,
		"everything the update wrote was rolled back; example.service restarted or reloaded with the original files",
	} {
		requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, want)
		if reason := s.c.annotation(nodeanno.ReasonKey); !strings.Contains(reason, want) {
			t.Fatalf("reason annotation %q lacks %q", reason, want)
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.h.dir, "journalctl.log"))
	if string(log) != "--sync\n-u example.service -n 5 --no-pager -o cat\n" {
		t.Fatalf("journalctl ran with %q", log)
	}
}

// TestFailedRestartWithoutJournalctl: a host without journalctl still gets its rollback,
// and the report says why the journal is missing from it.
func TestFailedRestartWithoutJournalctl(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	s.c.policy = restartPolicy()
	s.backoff = 1 << 40
	s.h.systemd.SetJobResult("RestartUnit", "example.service", "failed")
	s.unitLog = host.NewUnitLog(s.h.dir, directRunner)
	s.c.setDesired(cfgB)
	if ended := s.run("", failedAndDegraded(s)); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	s.requireFiles(configA(t))
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue,
		`restart unit example.service: systemd job result "failed", not "done" (journalctl -u example.service says why); its journal could not be read: journal of unit example.service: the host has no /usr/bin/journalctl`)
	// The unit still fails on the originals: the report says so too.
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "restarting or reloading example.service with the original files failed too")
}
