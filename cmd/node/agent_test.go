package node

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/store"
)

func TestAgentFlagErrors(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	code, _, errOut := mcotui.Cmd(t, "agent")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--node is required (or set NODE_NAME)") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// This build has no failpoints (the failpoints tag): arming one is refused, by flag
	// or by environment. agent's tests check the names in a tagged build.
	code, _, errOut = mcotui.Cmd(t, "agent", "--node", "w", "--failpoint", "after-files")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "this build has no failpoints; build with -tags failpoints") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Setenv(failpointEnv, "nope")
	code, _, errOut = mcotui.Cmd(t, "agent", "--node", "w")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, `failpoint "nope": this build has no failpoints`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestAgentHelpHidesFailpoint(t *testing.T) {
	code, out, _ := mcotui.Cmd(t, "agent", "--help")
	if code != 0 || strings.Contains(out, "failpoint") || !strings.Contains(out, "--drain-timeout") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestAgentMetricsEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	agent.NewMetrics(reg)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	addr, stop, err := cmdutil.Serve("127.0.0.1:0", "metrics-addr", mux, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`mcotui_agent_phase{phase="Idle"} 1`, `mcotui_agent_phase{phase="Drain"} 0`,
		"mcotui_agent_drift 0", `mcotui_agent_updates_total{result="Done"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

// TestNodeOptions: the flags and environment as the agent and journal read them, without
// a cluster or a host: the DaemonSet mode's defaults follow --root.
func TestNodeOptions(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "")
	code, o := cmdtest.ParseOptions(t, NewCmdAgent, "agent", "--node", "w-1", "--root", "/rootfs")
	if code != cmdutil.ExitOK || o.node != "w-1" || o.root != "/rootfs" ||
		o.stateDir != "/rootfs/var/lib/mcotui" || o.busAddress != "unix:path=/rootfs/run/dbus/system_bus_socket" {
		t.Errorf("agent --node w-1 --root /rootfs: exit %d, %+v", code, o)
	}
	code, o = cmdtest.ParseOptions(t, NewCmdAgent, "agent", "--node", "w-1", "--state-dir", "/srv/state", "--bus-address", "unix:path=/tmp/bus")
	if code != cmdutil.ExitOK || o.root != "/" || o.stateDir != "/srv/state" || o.busAddress != "unix:path=/tmp/bus" {
		t.Errorf("agent with --state-dir and --bus-address: exit %d, %+v", code, o)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdAgent, "agent"); code != cmdutil.ExitUsage {
		t.Errorf("agent without --node: exit %d, want %d before the run step", code, cmdutil.ExitUsage)
	}
	code, j := cmdtest.ParseOptions(t, NewCmdJournal, "journal", "--state-dir", "/var/lib/x", "-o", "json")
	if code != cmdutil.ExitOK || j.StateDir != "/var/lib/x" || j.Output != "json" {
		t.Errorf("journal --state-dir /var/lib/x -o json: exit %d, %+v", code, j)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdJournal, "journal", "-o", "yaml"); code != cmdutil.ExitUsage {
		t.Errorf("journal -o yaml: exit %d, want %d before the run step", code, cmdutil.ExitUsage)
	}
}

// TestAgentRefusesSecondOnStateDir: with an agent holding the state directory, another
// one exits at start, before it reaches for a cluster (the kubeconfig here is not one).
func TestAgentRefusesSecondOnStateDir(t *testing.T) {
	dir := t.TempDir()
	held, err := agent.LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	code, _, errOut := mcotui.Cmd(t, "agent", "--node", "w", "--state-dir", dir, "--kubeconfig", filepath.Join(dir, "none"))
	if code != cmdutil.ExitError || !strings.Contains(errOut, "is in use by another agent") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestAgentStoppedWhileStartingExitsCleanly: a stop that arrives while the agent waits
// for its informers to sync (here, before it begins: the context is already done) is
// a clean stop, exit 0 with a line saying so, not a failure to start.
func TestAgentStoppedWhileStartingExitsCleanly(t *testing.T) {
	env := cluster.Env(t)
	dir := t.TempDir()
	code, o := cmdtest.ParseOptions(t, NewCmdAgent, "agent", "--node", "w", "--root", dir,
		"--state-dir", filepath.Join(dir, "state"), "--kubeconfig", env.KubeconfigPath, "--metrics-addr", "")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d", code)
	}
	var errOut strings.Builder
	o.IOStreams = cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Run(ctx); err != nil {
		t.Fatalf("a stop during the start failed the agent: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "agent stopped while starting: context canceled") {
		t.Errorf("the agent did not say it stopped while starting:\n%s", errOut.String())
	}
}

// TestAgentSafeDefaults: metrics on loopback only, and the size limits, unless told.
func TestAgentSafeDefaults(t *testing.T) {
	code, o := cmdtest.ParseOptions(t, NewCmdAgent, "agent", "--node", "w")
	if code != cmdutil.ExitOK || o.metricsAddr != "127.0.0.1:9101" || o.healthAddr != "" || o.logFormat != cmdutil.LogText || o.limits != ignconfig.DefaultLimits() {
		t.Fatalf("exit %d: metrics %q, health %q, log format %q, limits %+v", code, o.metricsAddr, o.healthAddr, o.logFormat, o.limits)
	}
	if code, _, errOut := mcotui.Cmd(t, "agent", "--node", "w", "--log-format", "xml"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `"xml": use text or json`) {
		t.Errorf("--log-format xml: exit %d: %s", code, errOut)
	}
	code, o = cmdtest.ParseOptions(t, NewCmdAgent, "agent", "--node", "w", "--max-file-size", "1Mi", "--max-config-size", "3000000")
	if code != cmdutil.ExitOK || o.limits != (ignconfig.Limits{File: 1 << 20, Total: 3000000}) {
		t.Fatalf("exit %d: limits %+v", code, o.limits)
	}
	if code, _, errOut := mcotui.Cmd(t, "agent", "--node", "w", "--max-file-size", "lots"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `"lots" is not a size`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestAgentReportsDamagedJournal: an agent whose journal does not open (here, a
// checksum that no longer matches) exits with the error, and first says so on its node:
// state Degraded, the reason naming the journal and the recovery, NodeDegraded on its
// MachineConfigNode. It had exited telling the cluster nothing.
func TestAgentReportsDamagedJournal(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	const node = "w-damaged-journal"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{
		nodeanno.CurrentConfigKey: "rendered-worker-a", nodeanno.DesiredConfigKey: "rendered-worker-a", nodeanno.StateKey: nodeanno.StateDone}}}
	if _, err := env.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	j, err := store.Open(filepath.Join(state, store.FileName), store.Options{Node: node})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(store.Update{Node: node, From: "rendered-worker-a", To: "rendered-worker-bbbb"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("rendered-worker-bbbb"), []byte("rendered-worker-bbbc"))
	if err := os.WriteFile(j.Path(), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := mcotui.Cmd(t, "agent", "--node", node, "--root", dir, "--state-dir", state,
		"--kubeconfig", env.KubeconfigPath, "--metrics-addr", "")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "is damaged") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reason := got.Annotations[nodeanno.ReasonKey]
	if got.Annotations[nodeanno.StateKey] != nodeanno.StateDegraded || !strings.Contains(reason, j.Path()+" is damaged") || !strings.Contains(reason, "does not match its checksum") {
		t.Fatalf("node state %q, reason %q: want Degraded naming the damaged journal", got.Annotations[nodeanno.StateKey], reason)
	}
	mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(mcn.Status.Conditions, string(mcfgv1.MachineConfigNodeNodeDegraded))
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "is damaged") {
		t.Fatalf("NodeDegraded %+v", c)
	}
}
