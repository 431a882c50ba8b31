package pools_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/pools"
)

func TestPoolsView(t *testing.T) {
	for _, w := range []int{200, 120, 80} {
		t.Run(strings.Repeat("w", 1)+itoa(w), func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			p := pools.New(c)
			p.SetFocused(true)
			p.SetScope("worker")
			p.SetSize(w, p.Height())
			v := p.View()
			tuitest.Golden(t, v)
			for i, l := range strings.Split(v, "\n") {
				if n := len([]rune(tuitest.Plain(l))); n > w {
					t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
				}
			}
		})
	}
}

func TestPoolsSelect(t *testing.T) {
	c := tuitest.Common(true, fixture.Small())
	p := pools.New(c)
	p.SetFocused(true)
	p.SetSize(120, p.Height())
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	cmd := p.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if cmd == nil {
		t.Fatal("no command")
	}
	if msg, ok := cmd().(common.SelectPoolMsg); !ok || msg.Pool != "worker" {
		t.Fatalf("enter: %#v", cmd())
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestPoolsNotes: under the pools, the selected pool's True Degraded, NodeDegraded and
// RenderDegraded messages (Degraded's only when it says something the others do not),
// and its rollback pin with the key that removes it; a pool without any shows its
// Updating message. The pane keeps one height whichever pool is selected.
func TestPoolsNotes(t *testing.T) {
	ev := fixture.Small()
	// worker: a render failure summed up by Degraded with the same message, and a pin.
	for _, e := range ev {
		p := e.Pool
		if p == nil || p.Name != "worker" {
			continue
		}
		p.Annotations = map[string]string{rollout.RollbackToAnnotation: fixture.WorkerOld, rollout.RollbackFromAnnotation: fixture.WorkerNew}
		msg := `Failed to render configuration for pool worker: could not generate rendered MachineConfig: Ignition version "9.9.9" is not supported`
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == mcfgv1.MachineConfigPoolDegraded {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Message = corev1.ConditionTrue, msg
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, mcfgv1.MachineConfigPoolCondition{Type: mcfgv1.MachineConfigPoolRenderDegraded, Status: corev1.ConditionTrue, Message: msg})
	}
	c := tuitest.Common(false, ev)
	p := pools.New(c)
	p.SetFocused(true)
	p.SetSize(200, p.Height())
	height := p.Height()
	if height != 2+3+2 {
		t.Fatalf("height %d, want title, header, 3 pools and worker's 2 notes", height)
	}
	notes := func() []string {
		lines := strings.Split(tuitest.Plain(p.View()), "\n")
		var out []string
		for _, l := range lines[2+3:] {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	want := map[string][]string{
		"infra":  {"infra Updating: Pool is paused; will not update to MachineConfig " + fixture.InfraNew},
		"master": {fmt.Sprintf(`master NodeDegraded: Node %s is reporting: "failed to drain node: 1 pod(s) could not be evicted: pod default/web-0 is protected by PodDisruptionBudget default/web"`, fixture.BlockedNode)},
		"worker": {
			`worker RenderDegraded: Failed to render configuration for pool worker: could not generate rendered MachineConfig: Ignition version "9.9.9" is not supported`,
			"worker pinned to " + fixture.WorkerOld + " by a rollback: R removes the pin, and the pool rolls forward",
		},
	}
	for i, name := range []string{"infra", "master", "worker"} {
		if i > 0 {
			p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
		}
		if got := p.Selected().Name; got != name {
			t.Fatalf("selected %s, want %s", got, name)
		}
		if got := notes(); !slices.Equal(got, want[name]) {
			t.Errorf("%s: notes\n%q\nwant\n%q", name, got, want[name])
		}
		if p.Height() != height {
			t.Errorf("%s selected: height %d, want %d", name, p.Height(), height)
		}
	}
}

// TestPoolsPolicyNotes: a pool's rollout policy shows under the pools: what holds it
// (RolloutHeld), or else what the policy does now; an invalid policy says so.
func TestPoolsPolicyNotes(t *testing.T) {
	ev := fixture.Small()
	for _, e := range ev {
		p := e.Pool
		if p == nil {
			continue
		}
		switch p.Name {
		case "infra":
			p.Annotations = map[string]string{policy.OrderKey: "Sideways"}
		case "master":
			p.Annotations = map[string]string{policy.WindowsKey: "Sat 22:00-Sun 04:00 UTC"}
		case "worker":
			p.Annotations = map[string]string{policy.WindowsKey: "Sat 22:00-Sun 04:00 UTC"}
			p.Status.Conditions = append(p.Status.Conditions, mcfgv1.MachineConfigPoolCondition{
				Type: policy.HeldCondition, Status: corev1.ConditionTrue, Reason: "OutsideWindow",
				Message: "outside the maintenance windows: next window opens Sat 22:00 UTC",
			})
		}
	}
	c := tuitest.Common(false, ev)
	p := pools.New(c)
	p.SetFocused(true)
	p.SetSize(200, p.Height())
	text := func() string { return tuitest.Plain(p.View()) }
	if got := text(); !strings.Contains(got, `rollout policy: pool infra annotation mcotui.io/update-order: "Sideways" is not OldestFirst or NewestFirst`) {
		t.Errorf("infra's invalid policy not shown:\n%s", got)
	}
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	if got := text(); !strings.Contains(got, "rollout policy: windows Sat 22:00-Sun 04:00 UTC (next window in ") {
		t.Errorf("master's window not shown:\n%s", got)
	}
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	if got := text(); !strings.Contains(got, "RolloutHeld: outside the maintenance windows: next window opens Sat 22:00 UTC") || strings.Contains(got, "rollout policy: windows") {
		t.Errorf("worker: want the hold alone:\n%s", got)
	}
}

// TestPoolsImageBuildWait: an image mode pool whose Updating message (MCO's, in its
// TestCalculateStatus words) says it waits on its OS image build shows "build" in the
// UPDATING column, not a bare True, and the message as its note.
func TestPoolsImageBuildWait(t *testing.T) {
	ev := fixture.Small()
	const msg = "Pool is waiting for OS image build to complete (mosb: infra-4a5b6c)"
	for _, e := range ev {
		p := e.Pool
		if p == nil || p.Name != "infra" {
			continue
		}
		p.Spec.Paused = false
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == mcfgv1.MachineConfigPoolUpdating {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Message = corev1.ConditionTrue, msg
			}
		}
	}
	c := tuitest.Common(false, ev)
	p := pools.New(c)
	p.SetFocused(true)
	p.SetSize(200, p.Height())
	v := tuitest.Plain(p.View())
	var row string
	for _, l := range strings.Split(v, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "infra" || f[1] == "infra") {
			row = l
		}
	}
	if !strings.Contains(row, " build ") {
		t.Errorf("infra's row does not say build:\n%s", v)
	}
	if !strings.Contains(v, msg) {
		t.Errorf("no note with MCO's message:\n%s", v)
	}
}

// TestPoolsStreams: under the pools, the selected pool's OS image stream and where it
// comes from, as `mcotui status` says it (osstream.From: the pool's own, a custom pool
// inheriting worker's, the cluster's default), and the stream its status reports when
// that differs; beside the Updating message, not instead of it. At 80 and 200 columns.
func TestPoolsStreams(t *testing.T) {
	ev := fixture.Small()
	for _, e := range ev {
		switch p := e.Pool; {
		case p == nil:
		case p.Name == "worker":
			p.Spec.OSImageStream.Name = "rhel-10"
			p.Status.OSImageStream.Name = "rhel-9"
		case p.Name == "master":
			p.Status.OSImageStream.Name = "rhel-9"
		}
	}
	want := map[string][]string{
		"infra": {"infra Updating: Pool is paused; will not update to MachineConfig " + fixture.InfraNew,
			"infra OS image stream rhel-10 (worker pool); status reports none yet (not updated onto it, degraded, or osImageURL overridden)"},
		"master": {fmt.Sprintf(`master NodeDegraded: Node %s is reporting: "failed to drain node: 1 pod(s) could not be evicted: pod default/web-0 is protected by PodDisruptionBudget default/web"`, fixture.BlockedNode),
			"master OS image stream: the cluster's default; status reports rhel-9"},
		"worker": {"worker remaining ~7m (from 2 nodes updated); Updating: All nodes are updating to MachineConfig " + fixture.WorkerNew,
			"worker OS image stream rhel-10 (spec.osImageStream); status reports rhel-9"},
	}
	for _, w := range []int{200, 80} {
		t.Run("w"+itoa(w), func(t *testing.T) {
			c := tuitest.Common(false, ev)
			p := pools.New(c)
			p.SetFocused(true)
			p.SetSize(w, p.Height())
			for i, name := range []string{"infra", "master", "worker"} {
				if i > 0 {
					p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
				}
				lines := strings.Split(tuitest.Plain(p.View()), "\n")
				var got []string
				for _, l := range lines[2+3:] {
					if l = strings.TrimSpace(l); l != "" {
						got = append(got, l)
					}
				}
				var cut []string
				for _, s := range want[name] {
					cut = append(cut, strings.TrimSpace(tuitest.Plain(fit(s, w))))
				}
				if !slices.Equal(got, cut) {
					t.Errorf("%s: notes\n%q\nwant\n%q", name, got, cut)
				}
				if name == "infra" {
					tuitest.Golden(t, p.View())
				}
			}
		})
	}
}

// fit is a note line as the pane cuts it to w columns.
func fit(s string, w int) string {
	var b strings.Builder
	layout.Fit(&b, " "+s, w)
	return b.String()
}
