package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestControllerProbesAndMetrics runs `mcotui controller` as its flags configure it, on
// the test control plane, with --metrics-addr, --health-addr and --log-format json: its
// /healthz answers, its /readyz is ready once it leads with synced caches, and its
// /metrics shows it leading, the pool's machine counts, the targets it wrote and its
// workqueues, while it rolls a pool of two kwok nodes out.
func TestControllerProbesAndMetrics(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	c := cmdtest.NewRolloutCluster(t, env, "probes", 2, nil)
	c.StartAgent(t, 0)
	ns, err := env.CreateNamespace(ctx, "mcotui-probes-")
	if err != nil {
		t.Fatal(err)
	}
	code, o := cmdtest.ParseOptions(t, NewCmdController, "controller", "--kubeconfig", env.KubeconfigPath,
		"--namespace", ns, "--identity", "probes-controller",
		"--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "200ms",
		"--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0", "--log-format", "json")
	if code != cmdutil.ExitOK {
		t.Fatalf("controller flags: exit %d", code)
	}

	// The log, read as the lines come: each must be JSON, and two say where the
	// servers listen (port 0 picks free ones).
	logR, logW := io.Pipe()
	o.IOStreams.ErrOut = logW
	addrs := map[string]string{}
	found := make(chan struct{})
	var lines []string
	linesDone := make(chan struct{})
	go func() {
		defer close(linesDone)
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var rec struct{ Msg, Flag, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" {
				addrs[rec.Flag] = rec.Addr
				if len(addrs) == 2 {
					close(found)
				}
			}
		}
	}()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- o.Run(runCtx)
		_ = logW.Close()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		<-linesDone
	}
	defer stop()
	select {
	case <-found:
	case err := <-done:
		t.Fatalf("the controller ended before serving: %v", err)
	}
	get := func(flag, path string) (int, string) {
		resp, err := http.Get("http://" + addrs[flag] + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := get("health-addr", "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	cmdtest.WaitFor(t, "the controller's /readyz answers ok", func() bool {
		code, body := get("health-addr", "/readyz")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok"
	})
	c.WaitUpdated(t)
	want := []string{
		"mcotui_controller_leader 1",
		`mcotui_pool_machines{count="total",pool="probes"} 2`,
		`mcotui_pool_machines{count="updated",pool="probes"} 2`,
		`mcotui_pool_nodes{pool="probes",state="Done"} 2`,
		`mcotui_pool_update_progress_ratio{pool="probes"} 1`,
		`mcotui_pool_updating_seconds{pool="probes"} 0`,
		`mcotui_controller_targets_total{pool="probes"} 2`,
		`workqueue_adds_total{name="rollout"}`,
		`workqueue_depth{name="render"}`,
		"go_goroutines",
	}
	kubetest.Eventually(t, time.Minute, "the pool's counts on /metrics", func() (bool, string) {
		_, body := get("metrics-addr", "/metrics")
		var missing []string
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0, "lacks " + strings.Join(missing, ", ")
	})

	stop()
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("--log-format json wrote a line that is not JSON: %s", l)
		}
	}
}

// TestControllerServesNothingByDefault: without --metrics-addr and --health-addr the
// controller listens on no port; --log-format takes text or json only.
func TestControllerServesNothingByDefault(t *testing.T) {
	code, o := cmdtest.ParseOptions(t, NewCmdController, "controller")
	if code != cmdutil.ExitOK || o.MetricsAddr != "" || o.HealthAddr != "" || o.LogFormat != cmdutil.LogText {
		t.Fatalf("exit %d: metrics %q, health %q, log format %q", code, o.MetricsAddr, o.HealthAddr, o.LogFormat)
	}
	if code, _, errOut := mcotui.Cmd(t, "controller", "--log-format", "logfmt"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `"logfmt": use text or json`) {
		t.Errorf("--log-format logfmt: exit %d: %s", code, errOut)
	}
}
