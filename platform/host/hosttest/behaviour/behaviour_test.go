package behaviour

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcotui/mcotui/platform/host/hosttest"
)

var (
	busFlag  = flag.String("behaviour.bus", "", "D-Bus address of a real systemd to check (empty: the doubles on a private bus)")
	rootFlag = flag.String("behaviour.root", "/", "the real systemd's root directory, as this process sees it (with -behaviour.bus)")
)

// TestBehaviour runs the suite against real systemd when -behaviour.bus names its bus
// (the VM test bed runs this binary in the guest), else against the doubles.
func TestBehaviour(t *testing.T) {
	if *busFlag != "" {
		Run(t, Target{Name: "systemd", Bus: *busFlag, Root: *rootFlag, Runs: true})
		return
	}
	root := t.TempDir()
	for _, d := range []string{"etc/systemd/system", "usr/lib/systemd/system", "run/systemd/system"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bus := hosttest.StartBus(t)
	double := hosttest.NewSystemd(t, bus, root)
	Run(t, Target{Name: "doubles", Bus: bus.Address, Root: root, FailJobs: func(unit string) {
		double.SetJobResult("RestartUnit", unit, "failed")
		double.SetJobResult("StartUnit", unit, "failed")
	}})
}
