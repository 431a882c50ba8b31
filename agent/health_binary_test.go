package agent

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestAgentBinaryProbes runs the real mcotui binary as the agent of a kwok node, against
// the test's control plane with the host under a temporary root and the systemd and
// logind doubles, with --health-addr and --log-format json: /healthz answers, /readyz
// turns ready once the journal is open and the API server reached, every log line is
// a JSON object, and SIGTERM ends the agent cleanly.
func TestAgentBinaryProbes(t *testing.T) {
	n := newLiveNode(t, "probes", nil, false)
	n.h.journal = nil // the binary opens its own
	cmd := exec.Command(agentBinary(t), "agent",
		"--node", n.name, "--pool", "worker",
		"--kubeconfig", env.KubeconfigPath,
		"--root", n.h.dir, "--state-dir", n.h.stateDir, "--boot-id-file", n.h.bootIDFile,
		"--metrics-addr", "", "--health-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), n.h.bus.Env())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.StartChild(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	addrs := make(chan string, 1)
	var lines []string
	linesDone := make(chan struct{})
	go func() {
		defer close(linesDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var rec struct{ Msg, Flag, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" && rec.Flag == "health-addr" {
				addrs <- rec.Addr
			}
		}
	}()
	go func() { <-linesDone; exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var addr string
	select {
	case addr = <-addrs:
	case err := <-exited:
		t.Fatalf("the agent exited before serving its probes: %v\n%s", err, strings.Join(lines, "\n"))
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	kubetest.Eventually(t, time.Minute, "the agent's /readyz answers ok", func() (bool, string) {
		code, body := get("/readyz")
		return code == http.StatusOK && body == "ok", body
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("the agent did not end cleanly on SIGTERM: %v", err)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("--log-format json wrote a line that is not JSON: %s", l)
		}
	}
}
