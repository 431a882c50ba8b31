package tui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// twoBlockers are WaitingNode's drain held by two pods, as the agent reports it, in an
// eventsMsg: the fixture's one blocker and a second.
var twoBlockers = append(append([]phase.Blocker{}, fixture.WaitBlockers...),
	phase.Blocker{Pod: "shop/storefront-2", Budgets: []string{"shop/storefront"}})

func twoBlockersMsg() tea.Msg {
	for _, e := range fixture.Small() {
		if e.Kind == model.KindMCN && e.MCN.Name == fixture.WaitingNode {
			m := e.MCN.DeepCopy()
			m.Status.Conditions, _ = phase.Apply(m.Status.Conditions, m.Spec.ConfigVersion.Desired, metav1.NewTime(fixture.Now),
				phase.DrainFailed(phase.DescribeBlockers(twoBlockers)))
			return eventsMsg{events: []model.Event{model.MCNEvent(m)}}
		}
	}
	panic("no MachineConfigNode of " + fixture.WaitingNode + " in the fixture")
}

// TestChooseBlocker: in the detail of a node whose drain two pods hold, ] and [ move a
// mark between them, and v, ctrl+k, o and B act on the marked one (the first until
// one is chosen); from the grid, which lists no blockers, they act on the first.
func TestChooseBlocker(t *testing.T) {
	first, second := twoBlockers[0].Pod, twoBlockers[1].Pod
	open := tuitest.Seq([]tea.Msg{twoBlockersMsg()}, tuitest.Typed(":node "+fixture.WaitingNode), tuitest.Special(tea.KeyEnter))
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}} {
		ui, src := newScenarioUI(scenario{managed: true, pods: true})
		t.Cleanup(src.Close)
		acts := ui.opts.Actions.(*tuitest.Actions)
		drive(ui, size)
		drive(ui, open...)
		if !ui.showDetail {
			t.Fatalf("%dx%d: no detail of %s", size.Width, size.Height, fixture.WaitingNode)
		}
		marked := func(pod string) {
			t.Helper()
			view := tuitest.Plain(ui.View().Content)
			if !strings.Contains(view, "▸ "+pod) || strings.Count(view, "▸ shop/") != 1 {
				t.Fatalf("%dx%d: %s is not the one pod marked:\n%s", size.Width, size.Height, pod, view)
			}
		}
		marked(first)
		drive(ui, tuitest.Typed("]")...)
		marked(second)
		drive(ui, tuitest.Seq(tuitest.Typed("v"), tuitest.Typed("y"))...)
		drive(ui, tuitest.Seq([]tea.Msg{tea.KeyPressMsg{Code: 'k', Mod: tea.ModCtrl}}, tuitest.Typed("y"))...)
		if got, want := acts.Calls(), []string{"EvictPod " + second, "DeletePod " + second}; !slices.Equal(got, want) {
			t.Fatalf("%dx%d: calls %q, want %q", size.Width, size.Height, got, want)
		}
		// o and B read the marked pod (the fake cluster has none of that name: the
		// notice names what was read).
		for k, want := range map[string]string{"o": "Pod " + second + " (YAML)", "B": "PodDisruptionBudgets of pod " + second} {
			drive(ui, tuitest.Typed(k)...)
			if (ui.dialog == nil || !strings.Contains(ui.dialog.Title(), want)) && !strings.Contains(ui.notice, want) {
				t.Fatalf("%dx%d: %s opened %v (notice %q), not %q", size.Width, size.Height, k, ui.dialog, ui.notice, want)
			}
			if ui.dialog != nil {
				drive(ui, tuitest.Special(tea.KeyEscape)...)
			}
		}
		// [ goes back, and wraps.
		drive(ui, tuitest.Typed("[")...)
		marked(first)
		if strings.Contains(ui.notice, "does nothing") {
			t.Errorf("%dx%d: [ moved the mark and the footer says %q", size.Width, size.Height, ui.notice)
		}
		drive(ui, tuitest.Typed("[")...)
		marked(second)
		// From the grid: the first.
		drive(ui, tuitest.Special(tea.KeyEscape)...)
		if ui.showDetail {
			t.Fatal("esc left the detail open")
		}
		drive(ui, tuitest.Seq(tuitest.Typed("v"), tuitest.Typed("y"))...)
		if got := acts.Calls(); len(got) != 3 || got[2] != "EvictPod "+first {
			t.Errorf("%dx%d: v from the grid: calls %q, want the first blocker %s evicted", size.Width, size.Height, got, first)
		}
	}
}
