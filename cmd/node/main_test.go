package node

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does.
var mcotui = cmdtest.Runner(func(f *cmdutil.Factory) *cobra.Command {
	root := cmdutil.NewRoot(f.IOStreams)
	root.AddCommand(NewCmdAgent(f), NewCmdJournal(f))
	return root
})

// The node commands' tests need no cluster: TestMain only runs them from the module's root.
func TestMain(m *testing.M) { cmdtest.Main(m, &cmdtest.Cluster{}) }
