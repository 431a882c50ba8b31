package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/store"
)

// The state machine's unit tests: a fake Cluster, and the real rest — files under a
// temporary root, the real go-systemd client over a private D-Bus to the doubles, the
// real journal. The same scenarios run against a real API server in
// integration_test.go.

// scenario is one node: its host, its cluster, the configs it knows.
type scenario struct {
	t *testing.T
	h *hostEnv
	c *fakeCluster
	// backoff is the agent's MinBackoff: short, unless a test must look at the host
	// between a failure and the retry.
	backoff time.Duration
	boots   int
	// unitLog is the agents' journal reader; nil leaves them without one.
	unitLog UnitLogger
	// limits are the agents' size limits; zero is the defaults.
	limits ignconfig.Limits
	// cmdline is the agents' CmdlineFile ("" leaves the kernel command line unchecked);
	// arch their Arch.
	cmdline, arch string
}

func newScenario(t *testing.T, current *mcfgv1.MachineConfig, others ...*mcfgv1.MachineConfig) *scenario {
	t.Helper()
	s := &scenario{t: t, h: newHostEnv(t), c: newFakeCluster("worker-0"), backoff: 10 * time.Millisecond, boots: 1}
	s.c.policy = testPolicy()
	for _, mc := range append([]*mcfgv1.MachineConfig{current}, others...) {
		s.c.mcs[mc.Name] = mc
	}
	s.h.layDown(t, current)
	s.c.node.Annotations[nodeanno.CurrentConfigKey] = current.Name
	s.c.node.Annotations[nodeanno.DesiredConfigKey] = current.Name
	s.c.node.Annotations[nodeanno.StateKey] = nodeanno.StateDone
	return s
}

type crashed struct{ name string }

// agent makes an Agent for the scenario. A failpoint panics with crashed, which run
// recovers: the in-process stand-in for SIGKILL (the crash tests use the real one).
func (s *scenario) agent(failpoint string) *Agent {
	s.t.Helper()
	a, err := New(Config{
		Node: "worker-0", Cluster: s.c, Journal: s.h.journal, Root: s.h.root, Systemd: s.h.sd,
		Logind: s.h.lg, OS: s.h.os, UnitLog: s.unitLog, StateDir: s.h.stateDir, BootIDFile: s.h.bootIDFile,
		Limits: s.limits, CmdlineFile: s.cmdline, Arch: s.arch,
		MinBackoff: s.backoff, MaxBackoff: max(s.backoff, 50*time.Millisecond), StageProgressEvery: time.Millisecond,
		Metrics:   NewMetrics(prometheus.NewRegistry()),
		Failpoint: failpoint, Crash: func(name string) { panic(crashed{name}) },
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

// run runs an agent until until() holds, it crashes at its failpoint, or a logind
// reboot is accepted (the node going down). It reports how the run ended.
func (s *scenario) run(failpoint string, until func() bool) (ended string) {
	s.t.Helper()
	a := s.agent(failpoint)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reboots := s.h.logind.Reboots()
	out := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if c, ok := r.(crashed); ok {
					out <- "crash " + c.name
					return
				}
				panic(r)
			}
		}()
		if err := a.Run(ctx); err != nil {
			out <- "error " + err.Error()
			return
		}
		out <- "stopped"
	}()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case e := <-out:
			return e
		case <-tick.C:
			if until != nil && until() {
				cancel()
				<-out
				return "until"
			}
			if s.h.logind.Reboots() > reboots {
				if failpoint == FailAfterReboot {
					// The machine going down could stop the agent before it learns
					// that logind accepted; armed here, it must get that far and crash
					// there, or the failpoint would be skipped after the boot.
					return <-out
				}
				cancel()
				<-out
				return "reboot"
			}
		case <-deadline:
			cancel()
			s.t.Fatalf("agent did not finish in 30s; node annotations %v, journal %s", s.c.node.Annotations, s.journalText())
			return ""
		}
	}
}

// done is the node Done on its desired config, and the journal with no update open.
func (s *scenario) done() bool {
	if s.c.annotation(nodeanno.StateKey) != nodeanno.StateDone ||
		s.c.annotation(nodeanno.CurrentConfigKey) != s.c.annotation(nodeanno.DesiredConfigKey) {
		return false
	}
	_, active, err := s.h.journal.Active()
	return err == nil && !active
}

// boot is the node coming back from a reboot: a new boot id.
func (s *scenario) boot(string) {
	s.boots++
	setBootID(s.t, s.h.bootIDFile, fmt.Sprintf("boot-%d", s.boots))
	s.h.logind.Boot()
}

func (s *scenario) journalText() string {
	us, err := s.h.journal.List()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "\n  %d %s->%s %s %q:", u.ID, u.From, u.To, u.Result, u.Message)
		for _, p := range u.Phases {
			fmt.Fprintf(&b, " %s", p.Name)
		}
	}
	return b.String()
}

func (s *scenario) lastUpdate() store.Update {
	s.t.Helper()
	us, err := s.h.journal.List()
	if err != nil || len(us) == 0 {
		s.t.Fatalf("journal: %v, %d updates", err, len(us))
	}
	return us[len(us)-1]
}

func (s *scenario) requireFiles(mc *mcfgv1.MachineConfig) {
	s.t.Helper()
	if ms := s.h.mismatches(s.t, mc); len(ms) > 0 {
		s.t.Fatalf("host differs from %s: %s", mc.Name, describeMismatches(ms))
	}
}

func requireCondition(t *testing.T, c *fakeCluster, typ mcfgv1.StateProgress, status metav1.ConditionStatus, msgHas string) {
	t.Helper()
	got := c.condition(typ)
	if got.Status != status || !strings.Contains(got.Message, msgHas) {
		t.Fatalf("%s = %s %q, want %s containing %q", typ, got.Status, got.Message, status, msgHas)
	}
}

func TestFileOnlyChangeReloadsWithoutDrainOrReboot(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	// An original file the config takes over, to come back when it leaves.
	s.c.setDesired(cfgB)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("agent ended with %s; journal %s", ended, s.journalText())
	}
	s.requireFiles(configB(t))
	if _, err := os.Stat(filepath.Join(s.h.dir, "etc/mcotui/gone.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("gone.conf left the config but is still on the host: %v", err)
	}
	if got := s.h.systemd.Reloads("example.service"); got != 1 {
		t.Fatalf("example.service reloaded %d times, want 1", got)
	}
	if s.h.logind.Reboots() != 0 || s.c.drains != 0 || s.c.cordons != 0 {
		t.Fatalf("reboots %d, drains %d, cordons %d: a Reload policy needs none", s.h.logind.Reboots(), s.c.drains, s.c.cordons)
	}
	u := s.lastUpdate()
	if u.Result != store.ResultDone || u.Reached(phaseCordon) || u.Reached(phaseReboot) {
		t.Fatalf("journal: %s", s.journalText())
	}
	requireCondition(t, s.c, phase.Updated, metav1.ConditionTrue, "Node worker-0 Updated")
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionFalse, "upgrade succeeded")
	if s.c.annotation(nodeanno.ReasonKey) != "" {
		t.Fatalf("reason annotation %q left after Done", s.c.annotation(nodeanno.ReasonKey))
	}
	// Snapshots go once the update is done.
	if _, err := os.Stat(filepath.Join(s.h.stateDir, "updates", "1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshots of a finished update left behind: %v", err)
	}
}

func TestUnitChangeDrainsAndReboots(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.c.pods = []string{"default/web-0", "default/web-1"}
	s.c.setDesired(cfgC)
	if ended := s.run("", s.done); ended != "reboot" {
		t.Fatalf("agent ended with %s before rebooting; journal %s", ended, s.journalText())
	}
	requireCondition(t, s.c, phase.RebootedNode, metav1.ConditionUnknown, "Upgrade requires a reboot.")
	if s.c.annotation(postConfigActionKey) != postConfigRebooting || !s.c.unschedulable() {
		t.Fatalf("before the reboot: annotations %v, unschedulable %t", s.c.node.Annotations, s.c.unschedulable())
	}
	s.boot("boot-2")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("agent ended with %s after the reboot; journal %s", ended, s.journalText())
	}
	s.requireFiles(configC(t))
	if state, _ := s.h.sd.UnitFileState(t.Context(), "hello.service"); state != "enabled" {
		t.Fatalf("hello.service is %s", state)
	}
	if s.h.logind.Reboots() != 1 || s.c.drains != 1 || len(s.c.evicted) != 2 {
		t.Fatalf("reboots %d, drains %d, evicted %v", s.h.logind.Reboots(), s.c.drains, s.c.evicted)
	}
	if s.c.unschedulable() || s.c.annotation(postConfigActionKey) != "" {
		t.Fatalf("after the update: unschedulable %t, annotations %v", s.c.unschedulable(), s.c.node.Annotations)
	}
	if got := readHostFile(t, s.h.dir, sshKeysPath); got != keyOld+"\n"+keyNew+"\n" {
		t.Fatalf("authorized keys %q", got)
	}
	if st, _ := s.h.root.Stat(sshKeysPath); st.Mode != 0o600 || st.UID != 1000 {
		t.Fatalf("authorized keys file %+v", st)
	}
}

func TestRebootNotHappenedAsksAgain(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.c.setDesired(cfgC)
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s", ended)
	}
	// Same boot id: the reboot never came.
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s", ended)
	}
	if s.h.logind.Reboots() != 2 {
		t.Fatalf("%d reboots, want the second ask", s.h.logind.Reboots())
	}
	s.boot("boot-2")
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
}

func TestUnreconcilableChangeWritesNothing(t *testing.T) {
	bad := configB(t)
	bad.Name = "rendered-worker-bad"
	bad.Spec.FIPS = true
	s := newScenario(t, configA(t), bad)
	before := snapshotTree(t, s.h.dir)
	s.c.setDesired(bad.Name)
	unreconcilable := func() bool { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateUnreconcilable }
	if ended := s.run("", unreconcilable); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("an unreconcilable change wrote to the host:\nbefore %s\nafter  %s", before, after)
	}
	requireCondition(t, s.c, phase.UpdatePrepared, metav1.ConditionUnknown, "are not compatible. Err: [spec.fips")
	if u := s.lastUpdate(); u.Result != store.ResultUnreconcilable {
		t.Fatalf("journal %s", s.journalText())
	}
	if !strings.Contains(s.c.annotation(nodeanno.ReasonKey), "spec.fips") {
		t.Fatalf("reason %q", s.c.annotation(nodeanno.ReasonKey))
	}
	// A second agent does not record it again.
	s.run("", func() bool { return true })
	if us, _ := s.h.journal.List(); len(us) != 1 {
		t.Fatalf("journal %s", s.journalText())
	}
}

func TestAdminCordonedNodeStaysCordoned(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.c.node.Spec.Unschedulable = true // an administrator's cordon: no mcotui marker
	s.c.setDesired(cfgC)
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s", ended)
	}
	s.boot("boot-2")
	s.run("", s.done)
	if !s.c.unschedulable() {
		t.Fatal("the agent uncordoned a node an administrator had cordoned")
	}
	requireCondition(t, s.c, phase.Uncordoned, metav1.ConditionFalse, "Node left cordoned")
}

func TestSymlinkedPathRefusedWithNothingWritten(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	// /etc/mcotui/c.conf is new in B: make it a link to a file outside the root.
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.h.dir, "etc/mcotui/c.conf")); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, s.h.dir)
	s.c.setDesired(cfgB)
	// The reason and NodeDegraded are read while the node is degraded: the agent retries
	// a refused update, and a retry begun before it stops resets both (Updated=False
	// resets NodeDegraded, as in MCO), so reading them after the run raced the retry.
	var reason string
	var cond metav1.Condition
	degraded := func() bool {
		n, err := s.c.Node(t.Context())
		if err != nil || n.Annotations[nodeanno.StateKey] != nodeanno.StateDegraded {
			return false
		}
		reason, cond = n.Annotations[nodeanno.ReasonKey], s.c.condition(phase.NodeDegraded)
		return cond.Status == metav1.ConditionTrue
	}
	if ended := s.run("", degraded); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("a refused config wrote to the host:\nbefore %s\nafter  %s", before, after)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if !strings.Contains(reason, "/etc/mcotui/c.conf is a symbolic link") || !strings.Contains(reason, "nothing was written") {
		t.Fatalf("reason %q", reason)
	}
	if !strings.Contains(cond.Message, "c.conf") {
		t.Fatalf("NodeDegraded = %s %q, want it to name c.conf", cond.Status, cond.Message)
	}
}

func TestFailureRollsBackEverything(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.h.systemd.FailMethod("EnableUnitFiles", "hello.service", "org.freedesktop.DBus.Error.AccessDenied", "denied by test")
	s.backoff = time.Hour // look at the host before any retry
	before := snapshotTree(t, s.h.dir)
	s.c.setDesired(cfgC)
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("rollback left changes:\nbefore %s\nafter  %s", before, after)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if s.c.annotation(nodeanno.StateKey) != nodeanno.StateDegraded || !strings.Contains(reason, "denied by test") || !strings.Contains(reason, "rolled back") {
		t.Fatalf("state %s, reason %q", s.c.annotation(nodeanno.StateKey), reason)
	}
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "enable unit hello.service")
	// Once systemd lets the unit be enabled, a retry completes the update.
	s.h.systemd.FailMethod("EnableUnitFiles", "hello.service", "", "")
	s.backoff = 10 * time.Millisecond
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("retry ended %s; journal %s", ended, s.journalText())
	}
	s.boot("boot-2")
	s.run("", s.done)
	s.requireFiles(configC(t))
}

func TestOriginalFileRestoredWhenItLeavesTheConfig(t *testing.T) {
	withD := configB(t)
	s := newScenario(t, configA(t), withD)
	// An administrator's file that B takes over (c.conf is new in B).
	writeHostFile(t, s.h.dir, "/etc/mcotui/c.conf", "admin's own\n", 0o600)
	s.c.setDesired(cfgB)
	s.run("", s.done)
	s.requireFiles(withD)
	back := configA(t)
	back.Name = "rendered-worker-a2"
	s.c.mcs[back.Name] = back
	s.c.setDesired(back.Name)
	s.run("", s.done)
	if got := readHostFile(t, s.h.dir, "/etc/mcotui/c.conf"); got != "admin's own\n" {
		t.Fatalf("c.conf after leaving the config = %q, want the original back", got)
	}
	if st, _ := os.Stat(filepath.Join(s.h.dir, "etc/mcotui/c.conf")); st.Mode().Perm() != 0o600 {
		t.Fatalf("original's mode %v", st.Mode())
	}
}

func TestDriftDetectedAndCleared(t *testing.T) {
	s := newScenario(t, configA(t))
	a := s.agent("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	kubetest.Eventually(t, time.Minute, "the drift monitor to watch", func() (bool, string) { a.driftMu.Lock(); defer a.driftMu.Unlock(); return a.drift != nil, "" })
	writeHostFile(t, s.h.dir, "/etc/mcotui/a.conf", "a=hand-edited\n", 0o644)
	kubetest.Eventually(t, time.Minute, "drift to be reported", func() (bool, string) { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded, "" })
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "/etc/mcotui/a.conf: contents differ from line 1") {
		t.Fatalf("reason %q", reason)
	}
	requireCondition(t, s.c, phase.NodeDegraded, metav1.ConditionTrue, "/etc/mcotui/a.conf")
	writeHostFile(t, s.h.dir, "/etc/mcotui/a.conf", "a=1\n", 0o644)
	kubetest.Eventually(t, time.Minute, "drift to clear", func() (bool, string) { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateDone, "" })
	if got := s.c.eventReasons(); got["ConfigDriftDetected"] != 1 || got["ConfigDriftResolved"] != 1 {
		t.Fatalf("events %v", got)
	}
	// A mode change is drift too.
	if err := os.Chmod(filepath.Join(s.h.dir, "etc/mcotui/b.conf"), 0o666); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, time.Minute, "mode drift", func() (bool, string) {
		reason := s.c.annotation(nodeanno.ReasonKey)
		return strings.Contains(reason, "mode is 0666, the config says 0600"), "reason " + reason
	})
}

func TestBlockedDrainReportsBlockersAndTimesOut(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.c.drainGate = make(chan struct{})
	s.c.blocked = []phase.Blocker{{Pod: "default/web-0", Budgets: []string{"default/web-pdb"}}}
	s.c.pods = []string{"default/web-0"}
	s.c.setDesired(cfgC)
	a := s.agent("")
	a.cfg.DrainTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	kubetest.Eventually(t, time.Minute, "the blockers in Drained", func() (bool, string) {
		msg := s.c.condition(phase.Drained).Message
		return strings.Contains(msg, "pod default/web-0 is protected by PodDisruptionBudget default/web-pdb"), "Drained: " + msg
	})
	kubetest.Eventually(t, time.Minute, "the drain timeout in NodeDegraded", func() (bool, string) {
		c := s.c.condition(phase.NodeDegraded)
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "failed to drain node worker-0 after 200ms"), fmt.Sprintf("NodeDegraded %s: %s", c.Status, c.Message)
	})
	close(s.c.drainGate) // the budget opens
	kubetest.Eventually(t, time.Minute, "the reboot", func() (bool, string) { return s.h.logind.Reboots() == 1, "" })
	if s.c.annotation(nodeanno.StateKey) != nodeanno.StateWorking {
		t.Fatalf("state %s after the drain got through", s.c.annotation(nodeanno.StateKey))
	}
}

func TestSupersededBeforeWritingStartsOver(t *testing.T) {
	s := newScenario(t, configA(t), configB(t), configC(t))
	s.c.drainGate = make(chan struct{}) // C's drain blocks
	s.c.setDesired(cfgC)
	ended := s.run("", func() bool { return s.c.condition(phase.Drained).Status == metav1.ConditionUnknown })
	if ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	s.c.drainGate = nil
	s.c.setDesired(cfgB)
	s.run("", s.done)
	us, _ := s.h.journal.List()
	if len(us) != 2 || us[0].Result != store.ResultSuperseded || us[1].Result != store.ResultDone || us[1].To != cfgB {
		t.Fatalf("journal %s", s.journalText())
	}
	s.requireFiles(configB(t))
	if s.c.unschedulable() {
		t.Fatal("a superseded update left the node cordoned")
	}
}

// snapshotTree describes every file under dir (path, mode, owner, contents' length and
// hash), to show that nothing changed.
func snapshotTree(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if slices.Contains(skip, p) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v", rel, info.Mode())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRevertedDesiredUncordonsAfterFailure(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.h.systemd.FailMethod("EnableUnitFiles", "hello.service", "org.freedesktop.DBus.Error.AccessDenied", "denied by test")
	s.backoff = time.Hour
	s.c.setDesired(cfgC)
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed
	}
	s.run("", failed)
	if !s.c.unschedulable() {
		t.Fatal("a failed update that drained should leave the node cordoned for its retry")
	}
	s.backoff = 10 * time.Millisecond
	s.c.setDesired(cfgA)
	s.run("", func() bool { return !s.c.unschedulable() && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDone })
	s.requireFiles(configA(t))
}

// TestDrainTimeoutIgnoresClockSetBack: the drain's timeout counts the time spent in the
// phase on the monotonic clock. With the wall clock set back an hour between a restart
// and the drain's start, NodeDegraded came an hour late.
func TestDrainTimeoutIgnoresClockSetBack(t *testing.T) {
	s := newScenario(t, configA(t), configC(t))
	s.c.drainGate = make(chan struct{})
	s.c.blocked = []phase.Blocker{{Pod: "default/web-0", Budgets: []string{"default/web-pdb"}}}
	s.c.pods = []string{"default/web-0"}
	s.c.setDesired(cfgC)
	draining := func() bool {
		u, ok, err := s.h.journal.Active()
		cur, _ := u.Current()
		return err == nil && ok && cur.Name == phaseDrain
	}
	if ended := s.run("", draining); ended != "until" {
		t.Fatalf("ended %s before the drain", ended)
	}
	// The next process starts with the wall clock an hour behind the journal's stamps.
	back := func() time.Time { return time.Now().Add(-time.Hour) }
	j, err := store.Open(s.h.journal.Path(), store.Options{Now: back, Mono: store.ReadMono})
	if err != nil {
		t.Fatal(err)
	}
	s.h.journal = j
	a := s.agent("")
	a.cfg.Now = back
	a.cfg.DrainTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	kubetest.Eventually(t, 20*time.Second, "the drain timeout in NodeDegraded", func() (bool, string) {
		c := s.c.condition(phase.NodeDegraded)
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "failed to drain node worker-0 after 300ms"), fmt.Sprintf("NodeDegraded %s: %s", c.Status, c.Message)
	})
}
