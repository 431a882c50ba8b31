package tui

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/styles"
)

// narrationMsg is the latest message of Options.Narration.
type narrationMsg struct {
	text   string
	closed bool // the channel closed (after text, when there is one)
}

// waitForNarration waits for the embedder's next message. Only the latest is shown, so
// messages already superseded by the time the program reads are skipped.
func (u *UI) waitForNarration() tea.Cmd {
	ch := u.opts.Narration
	if ch == nil || u.narrationClosed {
		return nil
	}
	return func() tea.Msg {
		text, ok := receive(u, ch)
		if !ok {
			return narrationMsg{closed: true}
		}
		for {
			select {
			case next, ok := <-ch:
				if !ok {
					return narrationMsg{text: text, closed: true}
				}
				text = next
			default:
				return narrationMsg{text: text}
			}
		}
	}
}

// narrate shows a message and waits for the next.
func (u *UI) narrate(msg narrationMsg) tea.Cmd {
	if msg.text != "" {
		u.narration = oneLine(msg.text)
	}
	if msg.closed {
		u.narrationClosed = true
		return nil
	}
	return u.waitForNarration()
}

// oneLine makes s one line of plain text: the TUI styles it, and a newline or an escape
// sequence from the embedder would break the screen's layout.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, ansi.Strip(s))
	return strings.Join(strings.Fields(s), " ")
}

// narrationRows is how many lines the narration takes: one with Options.Narration,
// unless the terminal is too short to leave a line of panes above it.
func (u *UI) narrationRows() int {
	if u.opts.Narration == nil || u.height < 4 {
		return 0
	}
	return 1
}

// bodyHeight is the height of what is above the narration, the footer and the status
// line.
func (u *UI) bodyHeight() int {
	return max(0, u.height-2-u.narrationRows())
}

// narrationView is the narration line.
func (u *UI) narrationView() string {
	if u.narration == "" {
		return ""
	}
	st := u.c.Styles
	return ansi.Truncate(st.NarrationMark.Render(styles.GlyphNarration+" ")+st.Narration.Render(u.narration), u.width, layout.Ellipsis)
}
