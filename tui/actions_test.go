package tui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

func actionUI(t *testing.T, managed, readOnly bool) (*UI, *tuitest.Actions) {
	t.Helper()
	ui, src := newScenarioUI(scenario{managed: managed, readOnly: readOnly})
	t.Cleanup(src.Close)
	acts := ui.opts.Actions.(*tuitest.Actions)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	return ui, acts
}

func confirmTitle(ui *UI) string {
	if d, ok := ui.dialog.(*dialog.Confirm); ok {
		return d.Request().Title
	}
	return ""
}

// TestActionsAskThenAct: every action opens a confirmation that names what it changes,
// esc cancels it without a call, and y makes exactly the call it announced.
func TestActionsAskThenAct(t *testing.T) {
	tests := []struct {
		name    string
		managed bool
		keys    []tea.Msg
		title   string
		change  string // a line the confirmation must show
		call    string
	}{
		{"pause", false, tuitest.Seq(poolAt(2), tuitest.Typed("p")), "Pause pool worker", "spec.paused: false → true", "SetPaused worker true"},
		{"resume", false, tuitest.Seq(poolAt(0), tuitest.Typed("p")), "Resume pool infra", "spec.paused: true → false", "SetPaused infra false"},
		{"maxUnavailable", false, tuitest.Seq(poolAt(2), tuitest.Typed("m"), []tea.Msg{ctrl('u')}, tuitest.Typed("25%"), tuitest.Special(tea.KeyEnter)),
			"Set maxUnavailable of pool worker", "spec.maxUnavailable: 70% → 25%", "SetMaxUnavailable worker 25%"},
		{"boot image mode", false, tuitest.Seq(tuitest.Typed("bm"), tuitest.Special(tea.KeyTab, tea.KeyTab, tea.KeyEnter)),
			"Set the boot image mode to None", "Partial (update-boot-image=true) → None", "SetBootImageMode None"},
		{"partial selector", false, tuitest.Seq(tuitest.Typed("be"), []tea.Msg{ctrl('u')}, tuitest.Typed("machine.openshift.io/cluster-api-cluster"), tuitest.Special(tea.KeyEnter)),
			"Set the boot image mode to Partial", "→ Partial (machine.openshift.io/cluster-api-cluster)", "SetBootImageMode Partial (machine.openshift.io/cluster-api-cluster)"},
		{"rollout", true, tuitest.Seq(poolAt(2), tuitest.Typed("P"), tuitest.Special(tea.KeyEnter)),
			"Start the rollout of pool worker", "from " + fixture.WorkerOld + ": ci-ln-9xsm9-worker-d-zz91c",
			`Rollout worker ci-ln-9xsm9-worker-d-zz91c`},
		{"rollback", true, tuitest.Seq(poolAt(2), tuitest.Typed("R")),
			"Roll back pool worker", "annotation mcotui.io/rollback-to: " + fixture.WorkerOld,
			"RollBack worker " + fixture.WorkerOld + " " + fixture.WorkerNew},
		{"retry", true, tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter), tuitest.Typed("r")),
			"Retry node " + fixture.BlockedNode, "state: Degraded → Working", "Retry master " + fixture.BlockedNode},
		// From a blocked drain (issue 36), on OpenShift too: the pod that holds it.
		{"evict the blocking pod", false, tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter), tuitest.Typed("v")),
			"Evict pod default/web-0", "Budgets covering it: default/web.", "EvictPod default/web-0"},
		{"delete the blocking pod", false, tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter), []tea.Msg{ctrl('k')}),
			"Delete pod default/web-0", "Budgets this overrides: default/web.", "DeletePod default/web-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, confirm := range []bool{false, true} {
				ui, acts := actionUI(t, tt.managed, false)
				drive(ui, tt.keys...)
				if got := confirmTitle(ui); got != tt.title {
					t.Fatalf("confirmation %q, want %q (notice %q)", got, tt.title, ui.notice)
				}
				if view := tuitest.Plain(ui.View().Content); !strings.Contains(view, tt.change) {
					t.Fatalf("the confirmation does not say %q:\n%s", tt.change, view)
				}
				if len(acts.Calls()) != 0 {
					t.Fatalf("acted before confirmation: %v", acts.Calls())
				}
				if !confirm {
					drive(ui, tuitest.Special(tea.KeyEscape)...)
					if ui.dialog != nil || len(acts.Calls()) != 0 {
						t.Fatalf("esc: dialog %v, calls %v", ui.dialog, acts.Calls())
					}
					continue
				}
				drive(ui, tuitest.Typed("y")...)
				if got := acts.Calls(); !slices.Equal(got, []string{tt.call}) {
					t.Fatalf("calls %q, want %q", got, tt.call)
				}
				if ui.dialog != nil || ui.noticeErr {
					t.Fatalf("after the action: dialog %v, notice %q", ui.dialog, ui.notice)
				}
			}
		})
	}
}

// TestReadOnlyOffersNothing: in a read-only session no key opens a dialog that leads
// to a change, and a request or a confirmation that reaches the root anyway (a bug, a
// stale dialog) changes nothing.
func TestReadOnlyOffersNothing(t *testing.T) {
	for _, managed := range []bool{false, true} {
		ui, acts := actionUI(t, managed, true)
		for _, k := range ui.c.Keys.Dangerous() {
			if k.Enabled() {
				t.Errorf("binding %q is enabled in a read-only session", k.Help().Key)
			}
		}
		for _, path := range [][]tea.Msg{
			tuitest.Seq(poolAt(2), tuitest.Typed("p")), tuitest.Seq(poolAt(2), tuitest.Typed("m")), tuitest.Seq(poolAt(2), tuitest.Typed("R")),
			tuitest.Seq(poolAt(2), tuitest.Typed("P"), tuitest.Special(tea.KeyEnter)),
			tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter), tuitest.Typed("r")),
			tuitest.Typed("bm"), tuitest.Typed("be"),
		} {
			ui, _ := actionUI(t, managed, true)
			drive(ui, path...)
			if _, ok := ui.dialog.(*dialog.Document); ui.dialog != nil && !ok {
				t.Errorf("read-only: %v opened %s", path, ui.dialog.Title())
			}
		}
		drive(ui, common.RequestMsg{Request: action.PauseRequest("worker", true, 0)})
		if ui.dialog != nil || !strings.Contains(ui.notice, "read-only") {
			t.Errorf("a request in a read-only session: dialog %v, notice %q", ui.dialog, ui.notice)
		}
		drive(ui, common.ConfirmedMsg{Request: action.PauseRequest("worker", true, 0)})
		if calls := acts.Calls(); len(calls) != 0 {
			t.Errorf("a confirmation in a read-only session acted: %v", calls)
		}
	}
}

// TestMCOOffersWhatMCOAllows: on OpenShift, pausing, maxUnavailable and boot image
// modes are offered; rollouts, rollbacks and retries are not.
func TestMCOOffersWhatMCOAllows(t *testing.T) {
	ui, acts := actionUI(t, false, false)
	k := ui.c.Keys
	for _, b := range []struct {
		name    string
		enabled bool
		got     bool
	}{
		{"pause", true, k.Pause.Enabled()}, {"maxUnavailable", true, k.MaxUnavailable.Enabled()},
		{"boot image mode", true, k.BootImageMode.Enabled()}, {"selector", true, k.EditSelector.Enabled()},
		{"start rollout", false, k.StartRollout.Enabled()}, {"rollback", false, k.Rollback.Enabled()},
		{"retry", false, k.Retry.Enabled()},
	} {
		if b.got != b.enabled {
			t.Errorf("%s enabled %v, want %v", b.name, b.got, b.enabled)
		}
	}
	drive(ui, common.ConfirmedMsg{Request: action.RetryRequest("master", fixture.BlockedNode, fixture.MasterNew, "")})
	if len(acts.Calls()) != 0 || !strings.Contains(ui.notice, "Machine Config Operator") {
		t.Errorf("a retry on OpenShift: calls %v, notice %q", acts.Calls(), ui.notice)
	}
}

// TestActionErrorIsShown: an action that fails says so in the footer, with the error.
func TestActionErrorIsShown(t *testing.T) {
	ui, acts := actionUI(t, false, false)
	acts.Err = errString("machineconfigpools.machineconfiguration.openshift.io \"worker\" is forbidden")
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("p"), tuitest.Typed("y"))...)
	view := tuitest.Plain(ui.View().Content)
	if !ui.noticeErr || !strings.Contains(view, "Pause pool worker failed: machineconfigpools") {
		t.Fatalf("the error is not shown:\n%s", view)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestRollbackPinRemoved: R on a pool a rollback pinned offers the way back instead of a
// second rollback: removing the pin, confirmed, is the one call RollForward.
func TestRollbackPinRemoved(t *testing.T) {
	ev := fixture.Small()
	for _, e := range ev {
		if p := e.Pool; p != nil && p.Name == "worker" {
			p.Annotations = map[string]string{rollout.RollbackToAnnotation: fixture.WorkerOld, rollout.RollbackFromAnnotation: fixture.WorkerNew}
			p.Spec.Configuration.Name = fixture.WorkerOld
		}
	}
	src := model.NewChanSource(fixture.ManagedInfo, ev, 16)
	t.Cleanup(src.Close)
	acts := &tuitest.Actions{}
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, Actions: acts})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("R"))...)
	if got := confirmTitle(ui); got != "Remove the rollback pin of pool worker" {
		t.Fatalf("confirmation %q (notice %q)", got, ui.notice)
	}
	view := strings.Join(strings.Fields(tuitest.Plain(ui.View().Content)), " ")
	for _, want := range []string{
		"annotation " + rollout.RollbackToAnnotation + ": " + fixture.WorkerOld + " →",
		"annotation " + rollout.RollbackFromAnnotation + ": " + fixture.WorkerNew + " →",
		"renders the pool's MachineConfigs again",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, view)
		}
	}
	drive(ui, tuitest.Typed("y")...)
	if got, want := acts.Calls(), []string{"RollForward worker " + fixture.WorkerOld}; !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// TestRollbackAfterCompletedRollout: once a pool's rollout has completed (status and
// spec on the same config) R on the pool has nothing to go back to, but the configs
// view lists the earlier rendered configs, and R there takes the pool back to the one
// chosen: a confirmation that says what each node does, then the pin.
func TestRollbackAfterCompletedRollout(t *testing.T) {
	ev := fixture.Small()
	for _, e := range ev {
		if p := e.Pool; p != nil && p.Name == "worker" {
			p.Status.Configuration.Name = fixture.WorkerNew
		}
	}
	src := model.NewChanSource(fixture.ManagedInfo, ev, 16)
	t.Cleanup(src.Close)
	acts := &tuitest.Actions{}
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, Actions: acts})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("R"))...)
	if got := confirmTitle(ui); got != "" {
		t.Fatalf("R on a completed pool asks %q", got)
	}
	if !strings.Contains(ui.notice, "configs view") {
		t.Errorf("the notice does not point to the configs view: %q", ui.notice)
	}
	drive(ui, tuitest.Seq(tuitest.Special(tea.KeyEscape), tuitest.Typed(":configs worker"), tuitest.Special(tea.KeyEnter))...)
	for range 4 {
		if ui.configs.Selected() == fixture.WorkerOld {
			break
		}
		drive(ui, tuitest.Typed("k")...)
	}
	if ui.configs.Selected() != fixture.WorkerOld {
		t.Fatalf("the configs view does not list %s:\n%s", fixture.WorkerOld, tuitest.Plain(ui.View().Content))
	}
	drive(ui, tuitest.Typed("R")...)
	if got := confirmTitle(ui); got != "Roll back pool worker" {
		t.Fatalf("confirmation %q (notice %q)", got, ui.notice)
	}
	view := strings.Join(strings.Fields(tuitest.Plain(ui.View().Content)), " ")
	for _, want := range []string{
		"spec.configuration.name: " + fixture.WorkerNew + " →",
		"annotation " + rollout.RollbackToAnnotation + ": " + fixture.WorkerOld,
		"annotation " + rollout.RollbackFromAnnotation + ": " + fixture.WorkerNew,
		"Each node, no drain: Reload crio.service.",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, view)
		}
	}
	drive(ui, tuitest.Typed("y")...)
	if got, want := acts.Calls(), []string{"RollBack worker " + fixture.WorkerOld + " " + fixture.WorkerNew}; !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}
