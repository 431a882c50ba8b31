package interactive

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does: the root opens the TUI.
var mcotui = cmdtest.Runner(func(f *cmdutil.Factory) *cobra.Command {
	root := cmdutil.NewRoot(f.IOStreams)
	AddTUI(root, f, nil)
	root.AddCommand(NewCmdDemo(f, nil))
	return root
})

// cluster is the package's one control plane, started by the first test that needs it.
var cluster cmdtest.Cluster

func TestMain(m *testing.M) { cmdtest.Main(m, &cluster) }
