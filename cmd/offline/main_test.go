package offline

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does.
var mcotui = cmdtest.NewRunner(
	func(f *cmdutil.Factory) *cobra.Command { return NewCmdValidate(f, nil) },
	func(f *cmdutil.Factory) *cobra.Command { return NewCmdRender(f, nil) },
	func(f *cmdutil.Factory) *cobra.Command { return NewCmdDiff(f, nil) },
)

// The offline commands need no cluster: TestMain only runs them from the module's root.
func TestMain(m *testing.M) { cmdtest.Main(m, &cmdtest.Cluster{}) }
