package agent

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/store"
)

// The crash tests (make test-crash: go test -run TestCrash ./agent/...) run the real
// mcotui binary as the agent of a kwok node, against the test's control plane, with the
// host's files under a temporary root and systemd and logind doubles on a private bus.
// Each failpoint gets a node of its own. The agent runs with the failpoint armed until it
// SIGKILLs itself there, then again without it until the update is done. When logind
// accepts a reboot, the test plays the machine: it SIGKILLs the agent (unless the agent
// kills itself first, at after-reboot), writes a new boot id, and starts it again.
//
// Every run must end with the node Done on the new config, the files and units equal to
// it, the node schedulable, exactly one reboot, each pod evicted once and no second
// drain (a sentinel pod started on the node once the drain was done must survive), and
// a journal holding one Done update whose phases each appear once.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// agentBinary builds the mcotui binary once for the test binary.
func agentBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcotui-crash-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcotui")
		// The failpoints exist only in a build with their tag.
		cmd := exec.Command("go", "build", "-tags", "failpoints", "-o", binPath, ".")
		cmd.Dir = ".." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build the mcotui binary: %v", buildErr)
	}
	return binPath
}

// agentProcess is one run of the binary.
type agentProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState
	killed bool // by the test, not by itself
	log    *bytes.Buffer
	// failpoint is the one this run was armed with.
	failpoint string
}

func (n *liveNode) startBinary(t *testing.T, failpoint string) *agentProcess {
	t.Helper()
	cmd := exec.Command(agentBinary(t), "agent",
		"--node", n.name, "--pool", "worker",
		"--kubeconfig", env.KubeconfigPath,
		"--root", n.h.dir, "--state-dir", n.h.stateDir, "--boot-id-file", n.h.bootIDFile,
		"--metrics-addr", "")
	cmd.Env = append(os.Environ(), n.h.bus.Env(), failpointEnvName+"="+failpoint)
	p := &agentProcess{cmd: cmd, exited: make(chan struct{}), log: &bytes.Buffer{}, failpoint: failpoint}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Forked from kubetest's locked thread: a parent-death signal armed from an
	// ordinary goroutine's thread fires when that thread ends (the D-Bus doubles lock and
	// end threads), which would kill the agent at a moment no failpoint chose.
	if err := env.StartChild(cmd); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// failpointEnvName is the variable main reads (cmd/node/agent.go's failpointEnv).
const failpointEnvName = "MCOTUI_FAILPOINT"

func (p *agentProcess) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.killed = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *agentProcess) diedBySIGKILL() bool {
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// journalState reads the journal the binary writes, if it exists yet: the update in
// progress, or the last finished one.
func (n *liveNode) journalUpdates(t *testing.T) []store.Update {
	t.Helper()
	path := filepath.Join(n.h.stateDir, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	j, err := store.OpenExisting(path, store.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("the journal does not open after a crash: %v", err)
	}
	us, err := j.List()
	if err != nil {
		t.Fatalf("the journal does not read after a crash: %v", err)
	}
	return us
}

func (n *liveNode) doneAndJournaled(t *testing.T) bool {
	if !doneOn(cfgC)(n.get()) {
		return false
	}
	us := n.journalUpdates(t)
	return len(us) > 0 && us[len(us)-1].Result == store.ResultDone
}

func TestCrashAtEveryFailpoint(t *testing.T) {
	for _, fp := range Failpoints {
		t.Run(fp, func(t *testing.T) { crashAt(t, fp) })
	}
}

func crashAt(t *testing.T, fp string) {
	n := newLiveNode(t, "crash-"+fp, nil, false)
	// The binary replaces the in-process host: a fresh journal of its own.
	n.h.journal = nil
	n.runPod("web-0", nil)
	n.runPod("web-1", nil)
	n.setDesired(cfgC)

	armed, fired, sentinel := fp, false, false
	var logs []string
	for run := 1; run <= 8 && !n.doneAndJournaled(t); run++ {
		reboots := n.h.logind.Reboots()
		p := n.startBinary(t, armed)
		n.watch(t, p, reboots)
		t.Logf("run %d (failpoint %q): %v, killed by the test %t, reboots %d", run, armed, p.state, p.killed, n.h.logind.Reboots())
		logs = append(logs, fmt.Sprintf("--- run %d (failpoint %q): %v, killed by the test %t\n%s", run, armed, p.state, p.killed, p.log))
		if armed != "" && p.diedBySIGKILL() && !p.killed {
			armed, fired = "", true
		}
		if n.h.logind.Reboots() > reboots {
			n.boot()
		}
		// Once the drain is done, a pod started on the node must stay: a second drain
		// would evict it.
		if !sentinel && drainDone(n.journalUpdates(t)) {
			n.runPod("sentinel", nil)
			sentinel = true
		}
	}
	report := func() string { return strings.Join(logs, "\n") }
	if !fired {
		t.Fatalf("failpoint %s never fired\n%s", fp, report())
	}
	if !n.doneAndJournaled(t) {
		t.Fatalf("the node is not Done on %s after the crash at %s: annotations %v\n%s", cfgC, fp, n.get().Annotations, report())
	}
	if ms := n.h.mismatches(t, configC(t)); len(ms) > 0 {
		t.Fatalf("host differs from %s: %s\n%s", cfgC, describeMismatches(ms), report())
	}
	node := n.get()
	if node.Spec.Unschedulable || nodeanno.CordonedBy(node) != "" {
		t.Fatalf("node left unschedulable %t, cordoned-by %q", node.Spec.Unschedulable, nodeanno.CordonedBy(node))
	}
	if got := n.h.logind.Reboots(); got != 1 {
		t.Fatalf("%d reboots, want exactly 1\n%s", got, report())
	}
	left := n.podsLeft()
	if sentinel && !slices.Equal(left, []string{"sentinel"}) || !sentinel && len(left) != 0 {
		t.Fatalf("pods left %v (sentinel started: %t): a pod was not evicted, or the node was drained twice\n%s", left, sentinel, report())
	}
	us := n.journalUpdates(t)
	if len(us) != 1 || us[0].Result != store.ResultDone {
		t.Fatalf("journal %+v, want one Done update", us)
	}
	seen := map[string]bool{}
	for _, ph := range us[0].Phases {
		if seen[ph.Name] {
			t.Fatalf("phase %s journaled twice: %+v", ph.Name, us[0].Phases)
		}
		seen[ph.Name] = true
	}
}

// watch waits for the process to end by itself, or ends it: with SIGTERM once the node
// is Done, with SIGKILL (the machine going down) once logind has accepted a reboot and
// the agent has not died by itself within a moment.
//
// An agent armed at after-reboot is left to kill itself there, however long that takes:
// killed first, it would never reach that failpoint, which a resumed update skips.
func (n *liveNode) watch(t *testing.T, p *agentProcess, reboots int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var rebootSeen time.Time
	for {
		select {
		case <-p.exited:
			return
		case <-time.After(50 * time.Millisecond):
		}
		switch {
		case n.h.logind.Reboots() > reboots && p.failpoint != FailAfterReboot:
			if rebootSeen.IsZero() {
				rebootSeen = time.Now()
			} else if time.Since(rebootSeen) > time.Second {
				p.kill()
				return
			}
		case n.doneAndJournaled(t):
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(20 * time.Second):
				p.kill()
				t.Fatalf("the agent did not exit on SIGTERM:\n%s", p.log)
			}
			return
		case time.Now().After(deadline):
			p.kill()
			t.Fatalf("the agent neither finished nor crashed in 90s; annotations %v\n%s", n.get().Annotations, p.log)
		}
	}
}

func drainDone(us []store.Update) bool {
	return len(us) > 0 && us[len(us)-1].Reached(phaseSnapshot)
}

// TestCrashBinaryRefusesOnMCOCluster: the agent binary refuses to start where MCO's
// daemon DaemonSet exists, and says why.
func TestCrashBinaryRefusesOnMCOCluster(t *testing.T) {
	kubetest.InstallFakeMCO(t, env.Kube)
	n := newLiveNode(t, "crash-mco", nil, false)
	n.h.journal = nil
	p := n.startBinary(t, "")
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent did not refuse to start:\n%s", p.log)
	}
	if p.state.ExitCode() != 1 || !strings.Contains(p.log.String(), "the Machine Config Operator runs on this cluster") {
		t.Fatalf("exit %v:\n%s", p.state, p.log)
	}
}
