package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// docScreen marks a screen in the docs: "<!-- screen: WxH/SCENARIO -->" right before
// a ```text block, which must be that scenario's plain screen (TestScreensPlain's)
// at that size, each line's trailing spaces and the blank lines left out; with " box"
// after the name, only the dialog's box drawn over it.
var docScreen = regexp.MustCompile("(?m)^<!-- screen: (\\d+)x(\\d+)/([a-z0-9-]+)( box)? -->\n```text\n((?:.*\n)*?)```\n")

// docsWithScreens are the pages whose screens TestDocScreens keeps true.
var docsWithScreens = []string{"../README.md", "../docs/tui.md"}

// TestDocScreens: every screen the docs show is the TUI's screen now, rendered here
// from the test fixture at a fixed size and clock, so that no capture in README.md or
// docs/tui.md can go stale. `go test ./tui/ -run TestDocScreens -update` takes the
// screens again into the pages.
func TestDocScreens(t *testing.T) {
	update := false
	if f := flag.Lookup("update"); f != nil {
		update = f.Value.String() == "true"
	}
	byName := map[string]scenario{}
	for _, sc := range scenarios {
		byName[sc.name] = sc
	}
	shown := 0
	for _, path := range docsWithScreens {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		var failed bool
		out := docScreen.ReplaceAllStringFunc(doc, func(block string) string {
			m := docScreen.FindStringSubmatch(block)
			var w, h int
			fmt.Sscan(m[1], &w)
			fmt.Sscan(m[2], &h)
			sc, ok := byName[m[3]]
			if !ok {
				t.Errorf("%s: no scenario %q in tui_test.go's scenarios", filepath.Base(path), m[3])
				failed = true
				return block
			}
			shown++
			screen := renderPlain(sc, w, h)
			if m[4] != "" {
				screen = box(screen)
			}
			want := docText(screen)
			if m[5] != want {
				if !update {
					t.Errorf("%s: the screen %s is not the TUI's now (go test ./tui/ -run TestDocScreens -update takes it again); the TUI draws:\n%s",
						filepath.Base(path), m[1]+"x"+m[2]+"/"+m[3], want)
				}
				failed = true
			}
			return strings.Replace(block, "```text\n"+m[5], "```text\n"+want, 1)
		})
		if update && failed && out != doc {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if shown == 0 {
		t.Error("no page shows a screen marked <!-- screen: WxH/SCENARIO -->: the marks were lost")
	}
}

// renderPlain is a scenario's screen at a size, without colour, as TestScreensPlain
// draws it.
func renderPlain(sc scenario, w, h int) string {
	ui, src := newScenarioUI(sc)
	defer src.Close()
	drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: w, Height: h}}, sc.input...)...)
	if sc.narration != nil {
		readNarration(ui)
	}
	return tuitest.Plain(ui.View().Content)
}

// docText is a screen as the docs show it: trailing spaces and blank lines left out.
func docText(screen string) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimRight(l, " ")
		if l == "" {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// box is the dialog box drawn over a screen: from its top-left corner ╭ to its
// bottom-right ╯, the rest of each line left out.
func box(screen string) string {
	lines := strings.Split(screen, "\n")
	var out []string
	from, to := -1, -1
	for _, l := range lines {
		r := []rune(l)
		if from < 0 {
			i := strings.IndexRune(l, '╭')
			if i < 0 {
				continue
			}
			from = len([]rune(l[:i]))
			to = from
			for to < len(r) && r[to] != '╮' {
				to++
			}
		}
		if to >= len(r) {
			break
		}
		out = append(out, string(r[from:to+1]))
		if r[from] == '╰' {
			break
		}
	}
	return strings.Join(out, "\n")
}
