package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

func command(ui *UI, text string) {
	drive(ui, tuitest.Seq(tuitest.Typed(":"+text), tuitest.Special(tea.KeyEnter))...)
}

// TestCommandAliases: the palette takes k9s's resource names and short names, and any
// unambiguous prefix (k9s matches so); an ambiguous one lists what it could be.
func TestCommandAliases(t *testing.T) {
	for _, tt := range []struct {
		text string
		want view
		pool string
	}{
		{"machineconfigs worker", viewConfigs, "worker"},
		{"mc master", viewConfigs, "master"},
		{"boot", viewBootImages, ""},
		{"machinesets", viewBootImages, ""},
		{"no", viewMain, ""},
		{"machineconfigpools", viewMain, ""},
	} {
		t.Run(tt.text, func(t *testing.T) {
			ui, _ := newUI(false)
			drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
			ui.view = viewBootImages
			if tt.want == viewBootImages {
				ui.view = viewMain
			}
			command(ui, tt.text)
			if ui.promptErr != "" {
				t.Fatalf(":%s: %s", tt.text, ui.promptErr)
			}
			if ui.view != tt.want {
				t.Errorf(":%s: view %v, want %v", tt.text, ui.view, tt.want)
			}
			if tt.pool != "" && ui.configs.Pool() != tt.pool {
				t.Errorf(":%s: configs of %q", tt.text, ui.configs.Pool())
			}
		})
	}
	ui, _ := newUI(false)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	command(ui, "m")
	if !strings.Contains(ui.promptErr, "ambiguous") || !strings.Contains(ui.promptErr, "machineconfigs") {
		t.Errorf(":m: %q, want it called ambiguous, listing machineconfigs", ui.promptErr)
	}
}

// TestMessages: every notice is kept, whole, for :messages, however long and however
// soon the next key cleared it from the notice line.
func TestMessages(t *testing.T) {
	ui, _ := newUI(false)
	drive(ui, tea.WindowSizeMsg{Width: 80, Height: 24})
	ui.setNotice("first: "+strings.Repeat("a long explanation ", 8)+"END", true)
	drive(ui, tuitest.Typed("j")...) // a key clears the notice line
	ui.setNotice("second, for node "+fixture.WaitingNode, false)
	command(ui, "messages")
	if ui.dialog == nil || ui.dialog.Title() != "Messages" {
		t.Fatalf(":messages opened %v", ui.dialog)
	}
	view := strings.Join(strings.Fields(tuitest.Plain(ui.View().Content)), " ")
	for _, want := range []string{"a long explanation a long explanation", "END", "second, for node " + fixture.WaitingNode} {
		if !strings.Contains(view, want) {
			t.Errorf(":messages lacks %q:\n%s", want, tuitest.Plain(ui.View().Content))
		}
	}
}

// TestYAMLWholeLines: the YAML view is as wide as the screen and draws each line whole
// from its start (kubectl's YAML, valid to copy), never hard-wrapped into invalid YAML;
// / finds a line, and w wraps.
func TestYAMLWholeLines(t *testing.T) {
	ui, _ := newUI(false)
	drive(ui, tea.WindowSizeMsg{Width: 200, Height: 60})
	drive(ui, tuitest.Seq(tuitest.Typed("/waiting"), tuitest.Special(tea.KeyEnter), tuitest.Typed("y"))...)
	if ui.dialog == nil || !strings.Contains(ui.dialog.Title(), "(YAML)") {
		t.Fatalf("y opened %v", ui.dialog)
	}
	view := tuitest.Plain(ui.View().Content)
	want := "machineconfiguration.openshift.io/desiredConfig: " + fixture.WorkerNew
	if !strings.Contains(view, want) {
		t.Fatalf("the YAML does not show %q on one line:\n%s", want, view)
	}
	if w := maxLineWidth(view); w < 150 {
		t.Errorf("the YAML view is %d cells wide on a 200-column screen", w)
	}
	drive(ui, tuitest.Typed("/retry")...)
	drive(ui, tuitest.Special(tea.KeyEnter)...)
	view = tuitest.Plain(ui.View().Content)
	if !strings.Contains(view, "/retry: line") || !strings.Contains(view, "mcotui.io/retry: ") {
		t.Errorf("the search did not find mcotui.io/retry:\n%s", view)
	}
	drive(ui, tuitest.Typed("w")...)
	if d := ui.dialog; d == nil || !strings.Contains(d.Title(), "YAML") {
		t.Fatal("w closed the YAML view")
	}
}

func maxLineWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, len([]rune(strings.TrimRight(l, " "))))
	}
	return w
}
