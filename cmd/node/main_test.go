package node

import (
	"testing"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does.
var mcotui = cmdtest.NewRunner(cmdtest.Real(NewCmdAgent), cmdtest.Real(NewCmdJournal))

// The node commands' tests need no cluster: TestMain only runs them from the module's root.
func TestMain(m *testing.M) { cmdtest.Main(m, &cmdtest.Cluster{}) }
