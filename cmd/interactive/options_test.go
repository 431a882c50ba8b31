package interactive

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/tui/serve"
)

// The commands read their flags into their options, and the run step gets them,
// with no terminal and no cluster.
func TestInteractiveOptions(t *testing.T) {
	// The TUI is a root command's. ParseOptions runs what it is given under a bare
	// root, so the TUI's root is named tui there.
	code, o := cmdtest.ParseOptions(t, func(f *cmdutil.Factory, runF func(*TUIOptions) error) *cobra.Command {
		c := &cobra.Command{Use: "tui"}
		AddTUI(c, f, runF)
		return c
	}, "tui", "--read-only", "--log", "/tmp/x.log", "--context", "kind")
	if code != 0 || !o.ReadOnly || o.LogFile != "/tmp/x.log" || o.Kube.Context != "kind" || o.Namespace != install.Namespace || o.Narration != nil {
		t.Errorf("mcotui: exit %d, options %+v", code, o)
	}

	// serve's host key lives in the user's state directory, whatever the working
	// directory; it listens on loopback and holds clients to limits unless told.
	t.Setenv("XDG_STATE_HOME", "/state")
	code, s := cmdtest.ParseOptions(t, NewCmdServe, "serve", "--authorized-keys", "keys")
	if code != 0 || s.AuthorizedKeys != "keys" || s.Listen != "127.0.0.1:2222" || s.HostKey != "/state/mcotui/host_ed25519" || s.Limits != serve.DefaultLimits() || s.PodReads != "none" {
		t.Errorf("serve: exit %d, options %+v", code, s)
	}
	code, s = cmdtest.ParseOptions(t, NewCmdServe, "serve", "--authorized-keys", "keys", "--listen", ":2222", "--host-key", "hk",
		"--max-window", "300x100", "--max-sessions", "3", "--max-conns-per-addr", "2", "--handshake-timeout", "5s", "--idle-timeout", "1m", "--watch-timeout", "3h", "--max-session-time", "2h")
	want := serve.Limits{MaxWidth: 300, MaxHeight: 100, MaxSessions: 3, MaxConnsPerAddr: 2, HandshakeTimeout: 5 * time.Second, IdleTimeout: time.Minute, WatchTimeout: 3 * time.Hour, MaxSessionTime: 2 * time.Hour,
		MaxCells: serve.DefaultLimits().MaxCells, MaxUnauthenticated: serve.DefaultLimits().MaxUnauthenticated}
	if code != 0 || s.Listen != ":2222" || s.HostKey != "hk" || s.Limits != want {
		t.Errorf("serve with limits: exit %d, options %+v", code, s)
	}
	for _, bad := range [][]string{
		{},
		{"--authorized-keys", "keys", "--idle-timeout", "0"},
		{"--authorized-keys", "keys", "--watch-timeout", "0"},
		{"--authorized-keys", "keys", "--max-sessions", "0"},
		{"--authorized-keys", "keys", "--max-window", "8000"},
		{"--authorized-keys", "keys", "--max-window", "2x2"},
		{"--authorized-keys", "keys", "--pod-reads", "everyone"},
	} {
		if code, _ := cmdtest.ParseOptions(t, NewCmdServe, append([]string{"serve"}, bad...)...); code != cmdutil.ExitUsage {
			t.Errorf("serve %v: exit %d, want %d", bad, code, cmdutil.ExitUsage)
		}
	}

	code, d := cmdtest.ParseOptions(t, NewCmdDemo, "demo", "--nodes", "5", "--speed", "2", "--seed", "9")
	if code != 0 || d.Sim.Nodes != 5 || d.Sim.Speed != 2 || d.Sim.Seed != 9 || d.LogFile != "" {
		t.Errorf("demo: exit %d, options %+v", code, d)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdDemo, "demo", "--nodes", "1"); code != cmdutil.ExitUsage {
		t.Errorf("demo --nodes 1: exit %d, want %d", code, cmdutil.ExitUsage)
	}
}
