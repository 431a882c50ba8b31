package node

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/cmd/cmdutil"
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
	addr, stop, err := serveMetrics("127.0.0.1:0", reg, slog.New(slog.DiscardHandler))
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
