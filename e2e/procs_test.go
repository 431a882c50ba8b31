package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Leader election timing of the controllers: short, so that a killed leader's Lease
// expires within seconds, and long enough that a leader on two busy cores renews in time.
const (
	leaseDuration = "6s"
	renewDeadline = "4s"
	retryPeriod   = "500ms"
)

// controllerProc is one `mcotui controller` process.
type controllerProc struct {
	identity string
	cmd      *exec.Cmd
	logPath  string
	exited   chan struct{} // closed when the process has exited; err is set before
	err      error

	mu     sync.Mutex
	killed bool // by the test, on purpose
}

// startController runs `mcotui controller` as the cluster admin with its Lease in
// namespace, named identity (the Lease holder and the field manager of its writes). It
// is stopped when the test ends; an exit the test did not cause is reported then.
func startController(t *testing.T, logDir, namespace, identity string) *controllerProc {
	t.Helper()
	return startControllerWith(t, env.KubeconfigPath, logDir, namespace, identity)
}

// startControllerWith is startController with the credentials and the address of the
// kubeconfig file.
func startControllerWith(t *testing.T, kubeconfig, logDir, namespace, identity string) *controllerProc {
	t.Helper()
	logPath := filepath.Join(logDir, identity+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(mcotuiBin, "controller",
		"--kubeconfig", kubeconfig, "--namespace", namespace, "--identity", identity,
		"--lease-duration", leaseDuration, "--renew-deadline", renewDeadline, "--retry-period", retryPeriod)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Dies with the test binary, should it die without stopping it.
	if err := env.StartChild(cmd); err != nil {
		t.Fatalf("controller %s: %v", identity, err)
	}
	c := &controllerProc{identity: identity, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop(t)
		if b, err := os.ReadFile(logPath); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
			t.Errorf("controller %s: the race detector found a data race; its log:\n%s", identity, b)
		} else if t.Failed() {
			t.Logf("controller %s log ends:\n%s", identity, c.logTail(40))
		}
	})
	return c
}

// stop ends the controller with SIGTERM, as Kubernetes stops a pod, and reports an
// exit the test did not cause.
func (c *controllerProc) stop(t *testing.T) {
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	select {
	case <-c.exited:
		if !killed {
			t.Errorf("controller %s exited on its own during the test (%v); its log ends:\n%s", c.identity, c.err, c.logTail(30))
		}
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		t.Errorf("controller %s did not stop within 20s of SIGTERM; killed", c.identity)
	}
}

// kill ends the controller with SIGKILL, as a node failure or the OOM killer would: no
// Lease release, no cleanup.
func (c *controllerProc) kill() error {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill controller %s: %w", c.identity, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("controller %s still runs 10s after SIGKILL", c.identity)
	}
}

func (c *controllerProc) logTail(lines int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// mcotui runs the mcotui binary against the test cluster, as a user would, and returns
// its standard output; a failure fails the test with both outputs.
func mcotui(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcotuiBin, append(args, "--kubeconfig", env.KubeconfigPath)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcotui %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// kubectl runs the control plane's kubectl and returns its standard output.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := env.KubectlCommand(ctx, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// tables parses the kubectl-style tables in out, separated by blank lines, into rows of
// column name to value. Values must not be empty or contain spaces.
func tables(out string) [][]map[string]string {
	var all [][]map[string]string
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		header := strings.Fields(lines[0])
		var rows []map[string]string
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			row := map[string]string{}
			for i, h := range header {
				if i < len(f) {
					row[h] = f[i]
				}
			}
			rows = append(rows, row)
		}
		all = append(all, rows)
	}
	return all
}
