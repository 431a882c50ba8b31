package dialog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestBootModePlatformFromMachineSets: on a cluster without Infrastructure/cluster (no
// platform in Info) and without MachineConfiguration/cluster, the dialog starts from the
// mode the controller applies, the default of the platform the MachineSets name
// (bootimage.InferPlatform): All for the fixture's AWS MachineSets, selecting every one
// but the Windows one. It once took the platform from Info alone and started from None,
// selecting nothing, while the controller patched them.
func TestBootModePlatformFromMachineSets(t *testing.T) {
	c := tuitest.Common(false, slices.DeleteFunc(fixture.Small(), func(e model.Event) bool { return e.Kind == model.KindMachineConfiguration }))
	c.Info.Platform = ""
	if got := dialog.BootImagePlatform(c); got != fixture.Platform {
		t.Errorf("BootImagePlatform = %q, want %q, the MachineSets' platform", got, fixture.Platform)
	}
	d := dialog.NewBootMode(c, false)
	d.SetSize(100, 30)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"now the platform's default, All", "(no selector: every MachineSet)", "Selects 3 of 4 MachineSets, 1 more left alone"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
}

// TestBootModePreviewsMachineDeployments: the mode editor's preview says what the
// edited selection does to the Cluster API MachineDeployments, which follow the
// MachineSets' mode: the fixture's Partial selector selects 4 of 7, and 2 more
// (a NodePool's and a ClusterClass's) are left alone.
func TestBootModePreviewsMachineDeployments(t *testing.T) {
	c := tuitest.Common(false, append(fixture.Small(), fixture.MachineDeployments()...))
	d := dialog.NewBootMode(c, true)
	d.SetSize(100, 40)
	v := tuitest.Plain(d.View())
	if want := "and 4 of 7 Cluster API MachineDeployments, 2 more left alone"; !strings.Contains(v, want) {
		t.Errorf("missing %q in\n%s", want, v)
	}
	// Without MachineDeployments the preview says nothing of them.
	d = dialog.NewBootMode(tuitest.Common(false, fixture.Small()), true)
	d.SetSize(100, 40)
	if v := tuitest.Plain(d.View()); strings.Contains(v, "Cluster API") {
		t.Errorf("a cluster without Cluster API:\n%s", v)
	}
}
