// Package help is the `?` overlay: every key of the TUI, taken from the keymap's
// bindings (so the help cannot drift from what the keys do), with the filter syntax,
// the `:` commands and the grid's glyphs.
package help

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/styles"
)

// Entry is one line of help: a key (or a word to type) and what it does.
type Entry struct{ Key, Desc string }

// Group is a titled list of entries.
type Group struct {
	Title   string
	Entries []Entry
}

// FromBindings is a group of the help of bindings, skipping disabled ones and repeats
// (several panes share a binding).
func FromBindings(title string, bindings ...key.Binding) Group {
	g := Group{Title: title}
	seen := map[string]bool{}
	for _, b := range bindings {
		h := b.Help()
		if !b.Enabled() || h.Key == "" || seen[h.Key] {
			continue
		}
		seen[h.Key] = true
		g.Entries = append(g.Entries, Entry{Key: h.Key, Desc: h.Desc})
	}
	return g
}

// Pairs is a group of entries given as key, description, key, description...
func Pairs(title string, kv ...string) Group {
	g := Group{Title: title}
	for i := 0; i+1 < len(kv); i += 2 {
		g.Entries = append(g.Entries, Entry{Key: kv[i], Desc: kv[i+1]})
	}
	return g
}

// Model is the help overlay.
type Model struct {
	c             *common.Common
	width, height int // the screen the overlay is drawn over
	groups        []Group
	lines         []string // the body, laid out for the width
	contentWidth  int      // the body's width
	offset        int

	// styles are the styles lines were laid out in, and box the box View drew last
	// ("" when stale): the overlay is opened with the same groups and drawn unchanged
	// on every frame while it is open, and laying it out costs more than the rest of
	// the frame (it measures every cell with lipgloss), which a key pressed during a
	// burst waited for.
	styles *styles.Styles
	box    string
}

// New returns the overlay.
func New(c *common.Common) *Model { return &Model{c: c} }

// SetGroups sets what the overlay lists; the same groups again change nothing.
func (m *Model) SetGroups(groups []Group) {
	if m.lines != nil && m.styles == m.c.Styles && slices.EqualFunc(groups, m.groups, func(a, b Group) bool {
		return a.Title == b.Title && slices.Equal(a.Entries, b.Entries)
	}) {
		return
	}
	m.groups = groups
	m.relayout()
}

// SetSize implements common.Component: the size of the screen the box is centred on.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.relayout()
}

// boxWidth is the inner width of the box.
func (m *Model) boxWidth() int { return max(10, min(m.width-4, 110)) }

// bodyHeight is how many body lines the box shows.
func (m *Model) bodyHeight() int { return max(1, min(len(m.lines), m.height-4)) }

func (m *Model) relayout() {
	st := m.c.Styles
	m.styles, m.box = st, ""
	inner := m.boxWidth() - 2 // the box's padding
	blocks := make([]string, len(m.groups))
	keyW := 0
	for _, g := range m.groups {
		for _, e := range g.Entries {
			keyW = max(keyW, lipgloss.Width(e.Key))
		}
	}
	keyW = min(keyW, 16)
	for i, g := range m.groups {
		var b strings.Builder
		b.WriteString(st.DialogTitle.Render(g.Title))
		for _, e := range g.Entries {
			b.WriteString("\n")
			var kb strings.Builder
			layout.Fit(&kb, e.Key, keyW)
			b.WriteString(st.HelpKey.Render(kb.String()))
			b.WriteString("  ")
			b.WriteString(st.HelpDesc.Render(e.Desc))
		}
		blocks[i] = b.String()
	}
	// As many columns as fit side by side (at most three), the groups in order and the
	// columns about equally tall; the box then shrinks to what it holds.
	const gap = 4
	var body string
	for n := min(3, len(blocks)); n >= 1; n-- {
		columns := split(blocks, n)
		widths, total := make([]int, len(columns)), 0
		for i, col := range columns {
			for _, bl := range col {
				widths[i] = max(widths[i], lipgloss.Width(bl))
			}
			total += widths[i]
		}
		total += gap * (len(columns) - 1)
		if total > inner && n > 1 {
			continue
		}
		parts := make([]string, len(columns))
		for i, col := range columns {
			w := widths[i]
			if i < len(columns)-1 {
				w += gap
			}
			parts[i] = lipgloss.NewStyle().Width(w).Render(strings.Join(col, "\n\n"))
		}
		body = lipgloss.JoinHorizontal(lipgloss.Top, parts...)
		m.contentWidth = min(inner, total)
		break
	}
	m.lines = strings.Split(body, "\n")
	m.offset = max(0, min(m.offset, len(m.lines)-m.bodyHeight()))
}

// split divides blocks, in order, into n columns of about equal height.
func split(blocks []string, n int) [][]string {
	height := func(b string) int { return strings.Count(b, "\n") + 2 }
	total := 0
	for _, b := range blocks {
		total += height(b)
	}
	var cols [][]string
	start, h := 0, 0
	for i, b := range blocks {
		// Close a column once it holds its share, keeping enough blocks for the rest.
		if h > 0 && h+height(b)/2 > total/n && len(cols) < n-1 && len(blocks)-i >= n-1-len(cols) {
			cols = append(cols, blocks[start:i])
			start, h = i, 0
		}
		h += height(b)
	}
	return append(cols, blocks[start:])
}

// Update implements common.Component: the overlay scrolls when it does not fit.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	maxOff := max(0, len(m.lines)-m.bodyHeight())
	old := m.offset
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Up):
			m.offset--
		case key.Matches(msg, k.Down):
			m.offset++
		case key.Matches(msg, k.PageUp):
			m.offset -= m.bodyHeight()
		case key.Matches(msg, k.PageDown):
			m.offset += m.bodyHeight()
		case key.Matches(msg, k.Top):
			m.offset = 0
		case key.Matches(msg, k.Bottom):
			m.offset = maxOff
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.offset -= 3
		case tea.MouseWheelDown:
			m.offset += 3
		}
	}
	m.offset = max(0, min(m.offset, maxOff))
	if m.offset != old {
		m.box = ""
	}
	return nil
}

// View implements common.Component: the box, to be drawn over the screen's centre.
func (m *Model) View() string {
	st := m.c.Styles
	if m.box != "" && m.styles == st {
		return m.box
	}
	if m.styles != st {
		m.relayout() // new styles, without a resize
	}
	h := m.bodyHeight()
	body := m.lines[m.offset:min(len(m.lines), m.offset+h)]
	title := st.DialogTitle.Render("Help") + st.Dim.Render("  esc or ? to close")
	if len(m.lines) > h {
		title += st.Dim.Render("  ↑/↓ to scroll")
	}
	content := title + "\n\n" + strings.Join(body, "\n")
	m.box = st.Dialog.Width(max(m.contentWidth, lipgloss.Width(title)) + 4).Render(content)
	return m.box
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.Up, k.Down, k.Back, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var _ common.Component = (*Model)(nil)
