package promtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Real is a real Prometheus server (Debian's package prometheus), for the tests that
// check the stand-in and the client against the real API.
type Real struct {
	URL string
	cmd *exec.Cmd
	log *bytes.Buffer
}

// StartReal runs prometheus with rules (the text of a rule file) and one scrape target
// (host:port), scraping and evaluating every second, until the test ends. It returns
// once the server is ready, or fails the test with its log.
func StartReal(t testing.TB, rules, target string) *Real {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not installed (Debian package prometheus): run hack/system-deps.sh as root, or apt-get install -y --no-install-recommends prometheus")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: gate
    static_configs:
      - targets: [%q]
`, filepath.Join(dir, "rules.yml"), target)
	for name, text := range map[string]string{"prometheus.yml": cfg, "rules.yml": rules} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Prometheus takes a port, not a listener: take a free one and hand it over.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	r := &Real{URL: "http://" + addr, log: &bytes.Buffer{}}
	r.cmd = exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-exited
	})
	// Ready in a second or two; the wait ends with the process if it fails.
	for {
		resp, err := http.Get(r.URL + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited: %s", r.log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop kills the server, as a Prometheus that goes down.
func (r *Real) Stop() { _ = r.cmd.Process.Kill() }

// Log is what the server printed.
func (r *Real) Log() string { return r.log.String() }
