package cluster

import (
	"testing"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does.
var mcotui = cmdtest.NewRunner(cmdtest.Real(NewCmdController), cmdtest.Real(NewCmdStatus),
	cmdtest.Real(NewCmdRollout), cmdtest.Real(NewCmdPause), cmdtest.Real(NewCmdResume),
	cmdtest.Real(NewCmdBootImages), cmdtest.Real(NewCmdInstall))

// cluster is the package's one control plane, started by the first test that needs it.
var cluster cmdtest.Cluster

func TestMain(m *testing.M) { cmdtest.Main(m, &cluster) }
