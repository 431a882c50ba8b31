package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// TestCut: cut is ansi.Truncate and ansi.TruncateLeft in one pass, byte for byte, on
// every line of real screens (colour and not, the help open and not) and on lines of wide
// characters, combining marks, emoji and controls, at every cut.
func TestCut(t *testing.T) {
	var lines []string
	for _, sc := range []struct {
		w, h          int
		noColor, help bool
	}{{200, 60, false, true}, {120, 40, false, false}, {80, 24, true, true}} {
		src := model.NewChanSource(fixture.Info, fixture.Small(), 1)
		ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoColor: sc.noColor})
		ui.Update(tea.WindowSizeMsg{Width: sc.w, Height: sc.h})
		if sc.help {
			ui.Update(tea.KeyPressMsg{Code: '?', Text: "?"})
		}
		lines = append(lines, strings.Split(ui.render(), "\n")...)
	}
	lines = append(lines, "", "plain", "日本語のテキスト", "e\u0301te\u0301 \U0001F600 \U0001F1EB\U0001F1F7 x",
		"\x1b[1;31m日本\x1b[0m ab\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \tc\x7fd", "\x1b[31m", "abc\x1b[m")
	seen := map[string]bool{}
	for k, line := range lines {
		if seen[line] {
			continue
		}
		seen[line] = true
		// Every cut on the short lines; on a screen's, every eleventh cell (the glyphs
		// repeat column by column) and a box of 1, 2 or 41 cells.
		step := 1
		if k < len(lines)-7 {
			step = 11
		}
		w := ansi.StringWidth(line)
		for x := 0; x <= w+1; x += step {
			for _, end := range []int{x + 1, x + 2, x + 41} {
				left, leftW, right := cut(line, x, end)
				wantLeft := ansi.Truncate(line, x, "")
				wantRight := ansi.TruncateLeft(line, end, "")
				if left != wantLeft || leftW != ansi.StringWidth(wantLeft) || right != wantRight {
					t.Fatalf("cut(%q, %d, %d) = %q, %d, %q; want %q, %d, %q", line, x, end, left, leftW, right,
						wantLeft, ansi.StringWidth(wantLeft), wantRight)
				}
			}
		}
	}
}
