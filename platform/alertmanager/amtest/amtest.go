// Package amtest runs a real Alertmanager (hack/testbin.sh builds it into
// $MCOTUI_TESTBIN/alertmanager-VERSION/) for tests. A missing binary fails the test.
package amtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Version is the Alertmanager hack/testbin.sh builds.
const Version = "v0.35.0"

// Start runs Alertmanager on a free local port until the test ends and returns its URL
// once it is ready.
func Start(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MCOTUI_TESTBIN")
	if dir == "" {
		t.Fatal("MCOTUI_TESTBIN is not set: run `make testbin` (or hack/testbin.sh DIR) and export MCOTUI_TESTBIN=DIR")
	}
	bin := filepath.Join(dir, "alertmanager-"+Version, "alertmanager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("alertmanager %s not found at %s: run `make testbin` (hack/testbin.sh builds it): %v", Version, bin, err)
	}
	work := t.TempDir()
	cfg := filepath.Join(work, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte("route:\n  receiver: none\nreceivers:\n- name: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfg, "--storage.path="+filepath.Join(work, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start alertmanager: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	url := "http://" + addr
	// Ready when /-/ready answers 200; bounded by attempts, each waiting on the
	// process or a short tick, not a wall-clock budget.
	for attempt := 0; ; attempt++ {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if attempt > 600 {
			t.Fatalf("alertmanager at %s never became ready: %v", url, errOr(err, resp))
		}
		select {
		case err := <-exited:
			t.Fatalf("alertmanager exited before it was ready: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func errOr(err error, resp *http.Response) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("status %s", resp.Status)
}
