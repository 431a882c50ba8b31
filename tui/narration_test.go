package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// narrationLine is the line of a plain screen above the footer and the status line.
func narrationLine(t *testing.T, ui *UI) string {
	t.Helper()
	lines := strings.Split(tuitest.Plain(ui.View().Content), "\n")
	return lines[len(lines)-3]
}

// readNarration reads what is pending on the narration channel as the program's
// command does, and hands it to the program; the command the program returns to wait
// for the next message is not run, so that no reader is left behind on the channel.
func readNarration(ui *UI) {
	ui.Update(ui.waitForNarration()())
}

// TestNarration: the latest message shows on one line of plain text whatever the
// embedder sent, cut to the width; it stays once the channel is closed.
func TestNarration(t *testing.T) {
	ch := make(chan string, 4)
	ui := New(fixture.Source(16), Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, Narration: ch})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	if got := narrationLine(t, ui); got != "" {
		t.Errorf("before any message the narration line is %q, want it empty", got)
	}
	grid := ui.grid.View()

	ch <- "worker-3 failed\nto restart \x1b[31mchronyd\x1b[0m:\tsee its detail\r\n"
	readNarration(ui)
	if got, want := narrationLine(t, ui), "▸ worker-3 failed to restart chronyd: see its detail"; got != want {
		t.Errorf("narration line %q, want %q", got, want)
	}
	if ui.grid.View() != grid {
		t.Error("the first message moved the grid: its line must be kept from the start")
	}

	ch <- strings.Repeat("boot images ", 20)
	readNarration(ui)
	got := narrationLine(t, ui)
	if n := len([]rune(got)); n != 120 || !strings.HasSuffix(got, "…") {
		t.Errorf("a long message: %d cells %q, want 120 ending in …", n, got)
	}

	ch <- "the story is over"
	close(ch)
	readNarration(ui)
	if got := narrationLine(t, ui); got != "▸ the story is over" {
		t.Errorf("after the channel closed the narration line is %q, want the last message", got)
	}
	if ui.waitForNarration() != nil {
		t.Error("the program still waits on a closed channel")
	}

	for _, s := range []struct{ w, h int }{{200, 60}, {80, 24}, {40, 10}, {20, 5}, {20, 4}, {20, 3}} {
		drive(ui, tea.WindowSizeMsg{Width: s.w, Height: s.h})
		checkShape(t, ui.View().Content, s.w, s.h)
	}
}

// TestNarrationMouse: with the narration line, a click on the grid's last row still
// selects that row, and a click on the narration line selects nothing.
func TestNarrationMouse(t *testing.T) {
	ch := make(chan string, 1)
	ch <- "a story"
	ui := New(fixture.Source(16), Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, Narration: ch})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 12})
	readNarration(ui)
	lines := strings.Split(tuitest.Plain(ui.View().Content), "\n")
	last := lines[len(lines)-4] // the grid's last row, above the narration
	drive(ui, tea.MouseClickMsg{X: 3, Y: len(lines) - 4, Button: tea.MouseLeft})
	sel := ui.grid.Selected().Name
	if !strings.HasPrefix(strings.TrimSpace(last), sel) {
		t.Fatalf("a click on the grid's last row %q selected %s", last, sel)
	}
	drive(ui, tea.MouseClickMsg{X: 3, Y: len(lines) - 3, Button: tea.MouseLeft})
	if got := ui.grid.Selected().Name; got != sel {
		t.Errorf("a click on the narration line moved the grid's selection from %s to %s", sel, got)
	}
}
