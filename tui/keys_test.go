package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// TestUnboundKeySaysSo: a key that does nothing where it is pressed says so in the
// footer, instead of nothing; a bound key says nothing.
func TestUnboundKeySaysSo(t *testing.T) {
	ui, _ := newUI(false)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(ui, tuitest.Typed("z")...)
	if want := "z does nothing here: ? lists the keys"; ui.notice != want {
		t.Fatalf("notice %q, want %q", ui.notice, want)
	}
	drive(ui, tuitest.Typed("j")...)
	if ui.notice != "" {
		t.Fatalf("j (down) left the notice %q", ui.notice)
	}
}

// TestNoticeTimesOut: a notice goes by itself after Options.NoticeTimeout, and a later
// notice is not cut short by the expiry of an earlier one.
func TestNoticeTimesOut(t *testing.T) {
	src := fixture.Source(16)
	t.Cleanup(src.Close)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: time.Millisecond})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	_, first := ui.Update(tuitest.Typed("z")[0])
	if ui.notice == "" || first == nil {
		t.Fatalf("z: notice %q, expiry %v", ui.notice, first)
	}
	_, second := ui.Update(tuitest.Typed("Z")[0])
	if !strings.HasPrefix(ui.notice, "Z ") {
		t.Fatalf("Z: notice %q", ui.notice)
	}
	runCmdThrough(ui, first) // the first notice's expiry: the second stays
	if !strings.HasPrefix(ui.notice, "Z ") {
		t.Fatalf("the first notice's expiry cleared the second: %q", ui.notice)
	}
	runCmdThrough(ui, second)
	if ui.notice != "" {
		t.Fatalf("after its timeout the notice is still %q", ui.notice)
	}
}

// TestQLeavesViews: q leaves the help, a view and a node's detail, as esc does, and
// quits only from the top level.
func TestQLeavesViews(t *testing.T) {
	ui, _ := newUI(false)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	for _, tc := range []struct {
		name string
		open []tea.Msg
		left func() bool
	}{
		{"help", tuitest.Typed("?"), func() bool { return !ui.showHelp }},
		{"configs", tuitest.Typed("c"), func() bool { return ui.view == viewMain }},
		{"boot images", tuitest.Typed("b"), func() bool { return ui.view == viewMain }},
		{"detail", tuitest.Special(tea.KeyEnter), func() bool { return !ui.showDetail }},
		{"confirmation", tuitest.Seq(poolAt(2), tuitest.Typed("p")), func() bool { return ui.dialog == nil }},
	} {
		drive(ui, tc.open...)
		_, cmd := ui.Update(tuitest.Typed("q")[0])
		runCmd(ui, cmd, 0)
		if !tc.left() {
			t.Errorf("q did not leave the %s", tc.name)
		}
		if quits(cmd) {
			t.Errorf("q in the %s quit", tc.name)
		}
		drive(ui, tuitest.Special(tea.KeyTab)...) // back to the nodes
		ui.setFocus(paneNodes)
	}
	if _, cmd := ui.Update(tuitest.Typed("q")[0]); !quits(cmd) {
		t.Fatal("q at the top level does not quit")
	}
}

// TestPreviewOffersNoStartThatCannotWork: the preview of a paused pool lists no start,
// and enter there starts nothing.
func TestPreviewOffersNoStartThatCannotWork(t *testing.T) {
	ui, src := newScenarioUI(scenario{managed: true})
	t.Cleanup(src.Close)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(ui, tuitest.Seq(poolAt(0), tuitest.Typed("P"))...) // infra, paused
	if ui.dialog == nil || !strings.Contains(ui.dialog.Title(), "preview of pool infra") {
		t.Fatalf("no preview of infra: %v", ui.dialog)
	}
	if view := tuitest.Plain(ui.View().Content); strings.Contains(view, "start rollout") {
		t.Fatalf("the paused pool's preview offers a start:\n%s", view)
	}
	drive(ui, tuitest.Special(tea.KeyEnter)...)
	if ui.dialog == nil || !strings.Contains(ui.dialog.Title(), "preview of pool infra") {
		t.Fatalf("enter on a paused pool's preview left it for %v", ui.dialog)
	}
}
