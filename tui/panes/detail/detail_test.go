package detail_test

import (
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/detail"
)

func TestDetailView(t *testing.T) {
	tests := []struct {
		name, node string
		w, h       int
	}{
		{"blocked-drain-120x60", fixture.BlockedNode, 120, 60},
		{"blocked-drain-200x60", fixture.BlockedNode, 200, 60},
		{"draining-120x40", fixture.DrainingNode, 120, 40},
		{"admin-cordoned-120x40", fixture.CordonedNode, 120, 40},
		{"waiting-drain-120x40", fixture.WaitingNode, 120, 40},
		{"behind-120x40", fixture.BehindNode, 120, 40},
		{"not-ready-120x40", fixture.RebootNode, 120, 40},
		{"gone-80x5", "no-such-node", 80, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			d := detail.New(c)
			d.SetFocused(true)
			d.SetSize(tt.w, tt.h)
			d.SetNode(tt.node)
			v := d.View()
			tuitest.Golden(t, v)
			lines := strings.Split(v, "\n")
			if len(lines) != tt.h {
				t.Fatalf("%d lines, want %d", len(lines), tt.h)
			}
			for i, l := range lines {
				if n := len([]rune(tuitest.Plain(l))); n > tt.w {
					t.Errorf("line %d: %d cells, more than %d", i, n, tt.w)
				}
			}
		})
	}
}

func TestDetailShowsBlockers(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	d := detail.New(c)
	d.SetSize(160, 80)
	d.SetNode(fixture.BlockedNode)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"Drain blocked by", "default/web-0", "default/web", "NodeDegraded", "Error: Node Drain has not succeeded"} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
}

// TestDetailShowsPinnedImages: a node whose pinned images failed shows the error, each
// set's generations and the failure of the set.
func TestDetailShowsPinnedImages(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	mcn := c.Store.Node(fixture.DrainingNode).MCN.DeepCopy()
	err := errors.New("pull image q/x@sha256:00 failed after 5 tries: not found")
	mcn.Status.PinnedImageSets = []mcfgv1.MachineConfigNodeStatusPinnedImageSet{
		{Name: "release", DesiredGeneration: 2, CurrentGeneration: 1, LastFailedGeneration: 2, LastFailedGenerationError: err.Error()},
	}
	f := pinned.Failed(err)
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == string(f.Type) {
			mcn.Status.Conditions[i] = metav1.Condition{Type: string(f.Type), Status: f.Status, Reason: f.Reason, Message: f.Message}
		}
	}
	c.Store.Apply([]model.Event{model.MCNEvent(mcn)})
	d := detail.New(c)
	d.SetSize(160, 80)
	d.SetNode(fixture.DrainingNode)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"Pinned images", "Error: pull image q/x@sha256:00 failed", "release: generation 1 of 2", "generation 2 failed: pull image"} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q:\n%s", want, v)
		}
	}
}

// TestDetailShowsIrreconcilableChanges: a node that reports irreconcilable changes shows
// each field path and its diff.
func TestDetailShowsIrreconcilableChanges(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	mcn := c.Store.Node(fixture.DrainingNode).MCN.DeepCopy()
	mcn.Status.IrreconcilableChanges = []mcfgv1.IrreconcilableChangeDiff{
		{FieldPath: "spec.config.storage.disks[0]", Diff: "+ {\"device\":\"/dev/sdb\"}\n"},
	}
	c.Store.Apply([]model.Event{model.MCNEvent(mcn)})
	d := detail.New(c)
	d.SetSize(160, 80)
	d.SetNode(fixture.DrainingNode)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"Irreconcilable changes (not on this node; only new nodes get them)", "spec.config.storage.disks[0]", `+ {"device":"/dev/sdb"}`} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q:\n%s", want, v)
		}
	}
}

// TestDetailWaitingDrain: a drain held by a budget while the agent retries says what it
// waits on and for how long, and nowhere calls it failed.
func TestDetailWaitingDrain(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	d := detail.New(c)
	d.SetSize(160, 80)
	d.SetNode(fixture.WaitingNode)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"Drained, waiting for 16m", "Drain waiting for 16m on", "shop/cart-1", "shop/cart", "Status:          Ready,SchedulingDisabled"} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q:\n%s", want, v)
		}
	}
	for _, bad := range []string{"failed", "blocked by"} {
		if strings.Contains(v, bad) {
			t.Errorf("detail of a waiting drain says %q:\n%s", bad, v)
		}
	}
}

// TestDetailShowsImages: on an image mode node, the detail shows the OS image it booted
// and the one MCO built for its pool (the currentImage and desiredImage annotations).
func TestDetailShowsImages(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	n := c.Store.Node(fixture.DrainingNode).Obj.DeepCopy()
	n.Annotations[nodeanno.CurrentImageKey] = "registry.example.com/ocl/os@sha256:aa"
	n.Annotations[nodeanno.DesiredImageKey] = "registry.example.com/ocl/os@sha256:bb"
	c.Store.Apply([]model.Event{model.NodeEvent(n)})
	d := detail.New(c)
	d.SetSize(160, 80)
	d.SetNode(fixture.DrainingNode)
	v := tuitest.Plain(d.View())
	for _, want := range []string{"Current image", "registry.example.com/ocl/os@sha256:aa", "Desired image", "registry.example.com/ocl/os@sha256:bb"} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q:\n%s", want, v)
		}
	}
}

// TestDetailConditionMessagesWhole: at 80 columns, where a message column would be cut
// at the pane's edge, every condition message is shown whole, under its condition.
func TestDetailConditionMessagesWhole(t *testing.T) {
	c := tuitest.Common(false, fixture.Small())
	d := detail.New(c)
	d.SetSize(80, 200)
	d.SetNode(fixture.BlockedNode)
	v := strings.Join(strings.Fields(tuitest.Plain(d.View())), " ")
	for _, cond := range c.Store.Node(fixture.BlockedNode).MCN.Status.Conditions {
		if want := strings.Join(strings.Fields(cond.Message), " "); !strings.Contains(v, want) {
			t.Errorf("condition %s: message %q not shown whole", cond.Type, want)
		}
	}
	for i, l := range strings.Split(tuitest.Plain(d.View()), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d: %d cells, more than 80", i, n)
		}
	}
}
