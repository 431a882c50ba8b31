package node

import (
	"testing"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// mcotui runs this group's commands as main does.
var mcotui = cmdtest.NewRunner(cmdtest.Real(NewCmdAgent), cmdtest.Real(NewCmdJournal))

// cluster is the control plane of the tests that start an agent against one; the
// others need none.
var cluster = &cmdtest.Cluster{}

func TestMain(m *testing.M) { cmdtest.Main(m, cluster) }
