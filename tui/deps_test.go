package tui

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds the TUI to DESIGN.md's direction of dependencies (main -> tui,
// agent, controller -> core, store, platform): nothing under tui/, tests included,
// imports the controller, the agent or the demo. What the TUI needs of them (driving a
// rollout, the demo's story) main injects through Options.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./tui/...: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/mcotui/mcotui/controller", "github.com/mcotui/mcotui/agent", "github.com/mcotui/mcotui/sim/demo"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("a package under tui/ depends on %s: tui may import core, platform and store only; inject what it needs from main", p)
			}
		}
	}
}
