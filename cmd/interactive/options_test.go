package interactive

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/controller"
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
	if code != 0 || !o.ReadOnly || o.LogFile != "/tmp/x.log" || o.Kube.Context != "kind" || o.Namespace != controller.DefaultNamespace || o.Narration != nil {
		t.Errorf("mcotui: exit %d, options %+v", code, o)
	}

	code, s := cmdtest.ParseOptions(t, NewCmdServe, "serve", "--authorized-keys", "keys", "--listen", "127.0.0.1:0")
	if code != 0 || s.AuthorizedKeys != "keys" || s.Listen != "127.0.0.1:0" || s.HostKey != "mcotui_host_ed25519" {
		t.Errorf("serve: exit %d, options %+v", code, s)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdServe, "serve"); code != cmdutil.ExitUsage {
		t.Errorf("serve without --authorized-keys: exit %d, want %d", code, cmdutil.ExitUsage)
	}

	code, d := cmdtest.ParseOptions(t, NewCmdDemo, "demo", "--nodes", "5", "--speed", "2", "--seed", "9")
	if code != 0 || d.Sim.Nodes != 5 || d.Sim.Speed != 2 || d.Sim.Seed != 9 || d.LogFile != "" {
		t.Errorf("demo: exit %d, options %+v", code, d)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdDemo, "demo", "--nodes", "1"); code != cmdutil.ExitUsage {
		t.Errorf("demo --nodes 1: exit %d, want %d", code, cmdutil.ExitUsage)
	}
}
