package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/common"
)

// Document is a dialog showing a text too long for a box, scrolled with the movement
// keys: a rollout preview, a config diff. It may offer one action (a preview's "start
// rollout"), whose command the dialog returns when its key is pressed; the action
// itself must end in a Confirm.
type Document struct {
	c     *common.Common
	title string
	body  func(width int) string // the text, laid out for a width
	act   *key.Binding
	do    func() tea.Cmd

	w, h  int
	inner int
	vp    viewport.Model

	// A text document (NewText): the screen's full width, wrapped or not (w), and
	// searched (/, n, N).
	text      string
	full      bool
	wrap      bool
	lines     []string // the content as shown, to search
	searching bool     // the search is being typed
	query     string
	found     int // the line of the last match, -1 for none
}

// Wide makes the document as wide as the screen (a describe, whose lines are long),
// rather than a box of a readable width; it returns d.
func (d *Document) Wide() *Document {
	d.full = true
	return d
}

// NewText returns a document of plain text (YAML, a describe, the notices) as wide as
// the screen: w toggles wrapping (off, each line is whole, as copied, and ←/→ scroll
// sideways; on, long lines wrap at spaces), / searches, n and N go to the next and
// previous match.
func NewText(c *common.Common, title, text string, wrap bool) *Document {
	d := NewDocument(c, title, nil)
	d.text, d.full, d.wrap, d.found = strings.TrimRight(text, "\n"), true, wrap, -1
	d.body = d.layoutText
	return d
}

func (d *Document) layoutText(width int) string {
	if !d.wrap {
		return d.text
	}
	var b strings.Builder
	for i, l := range strings.Split(d.text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		// A wrapped line's rest hangs under it, indented as it was.
		ind := len(l) - len(strings.TrimLeft(l, " "))
		b.WriteString(strings.ReplaceAll(ansi.Wrap(l, width, ""), "\n", "\n"+strings.Repeat(" ", min(ind+2, width/2))))
	}
	return b.String()
}

// NewDocument returns a document dialog. body lays the text out for a width, so that a
// resize re-wraps it.
func NewDocument(c *common.Common, title string, body func(width int) string) *Document {
	vp := common.NewViewport(c)
	return &Document{c: c, title: title, body: body, vp: vp}
}

// WithAction offers an action on key b: do runs when it is pressed. A disabled binding
// (read-only, or not offered on this cluster) offers nothing.
func (d *Document) WithAction(b key.Binding, do func() tea.Cmd) *Document {
	d.act, d.do = &b, do
	return d
}

// Title implements common.Dialog.
func (d *Document) Title() string { return d.title }

// SetSize implements common.Component.
func (d *Document) SetSize(w, h int) {
	d.w, d.h = w, h
	inner, lines := box(w, h)
	if d.full {
		inner = max(20, w-8)
	}
	d.inner = inner
	content := d.body(inner)
	d.lines = strings.Split(content, "\n")
	// Title, blank, body, blank, hints: the body gets what is left.
	d.vp.SetWidth(inner)
	d.vp.SetHeight(max(1, min(strings.Count(content, "\n")+1, lines-4)))
	d.vp.SetContent(content)
}

// Update implements common.Component.
func (d *Document) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		k := d.c.Keys
		if d.text != "" {
			if done, cmd := d.textKey(msg); done {
				return cmd
			}
		}
		switch {
		case key.Matches(msg, k.Back, k.Quit):
			d.c.Post(common.CloseDialogMsg{})
			return nil
		case d.act != nil && key.Matches(msg, *d.act):
			return d.do()
		case key.Matches(msg, k.Top):
			d.vp.GotoTop()
			return nil
		case key.Matches(msg, k.Bottom):
			d.vp.GotoBottom()
			return nil
		}
	case tea.MouseWheelMsg:
	default:
		return nil
	}
	var cmd tea.Cmd
	d.vp, cmd = d.vp.Update(msg)
	return cmd
}

// Keys of a text document.
var (
	searchKey = key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search"))
	nextKey   = key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/previous match"))
	prevKey   = key.NewBinding(key.WithKeys("N"))
	wrapKey   = key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap"))
	leftKey   = key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "scroll sideways"))
	rightKey  = key.NewBinding(key.WithKeys("right"))
)

// textKey handles a text document's own keys: the search being typed, /, n, N, w and
// the sideways scroll; done is false for the keys it leaves to the document.
func (d *Document) textKey(msg tea.KeyPressMsg) (done bool, cmd tea.Cmd) {
	if d.searching {
		switch msg.Code {
		case tea.KeyEnter:
			d.searching = false
			d.search(d.vp.YOffset(), 1)
		case tea.KeyEscape:
			d.searching, d.query = false, ""
		case tea.KeyBackspace:
			if r := []rune(d.query); len(r) > 0 {
				d.query = string(r[:len(r)-1])
			}
		default:
			d.query += msg.Text
		}
		return true, nil
	}
	switch {
	case key.Matches(msg, searchKey):
		d.searching, d.query = true, ""
	case key.Matches(msg, nextKey) && d.query != "":
		d.search(d.found+1, 1)
	case key.Matches(msg, prevKey) && d.query != "":
		d.search(d.found-1, -1)
	case key.Matches(msg, wrapKey):
		d.wrap = !d.wrap
		d.vp.SetXOffset(0)
		d.SetSize(d.w, d.h)
	case key.Matches(msg, leftKey) && !d.wrap:
		d.vp.ScrollLeft(8)
	case key.Matches(msg, rightKey) && !d.wrap:
		d.vp.ScrollRight(8)
	default:
		return false, nil
	}
	return true, nil
}

// search moves to the first line from line on (step 1) or back (step -1) holding the
// query, case-insensitively, wrapping around the document.
func (d *Document) search(from, step int) {
	q := strings.ToLower(d.query)
	n := len(d.lines)
	if q == "" || n == 0 {
		return
	}
	for i := range n {
		l := ((from+step*i)%n + n) % n
		if strings.Contains(strings.ToLower(ansi.Strip(d.lines[l])), q) {
			d.found = l
			d.vp.SetYOffset(l)
			return
		}
	}
	d.found = -1
}

// View implements common.Component.
func (d *Document) View() string {
	title := d.title
	switch {
	case d.searching:
		title += "  /" + d.query + "█"
	case d.query != "" && d.found < 0:
		title += "  /" + d.query + ": no match"
	case d.query != "":
		title += fmt.Sprintf("  /%s: line %d", d.query, d.found+1)
	}
	if d.vp.TotalLineCount() > d.vp.Height() {
		title += fmt.Sprintf("  %3.0f%%", d.vp.ScrollPercent()*100)
	}
	return frame(d.c, title, d.vp.View(), hints(d.c, d.ShortHelp()...), d.inner)
}

// ShortHelp implements help.KeyMap.
func (d *Document) ShortHelp() []key.Binding {
	k := d.c.Keys
	out := []key.Binding{}
	if d.act != nil {
		out = append(out, *d.act)
	}
	if d.vp.TotalLineCount() > d.vp.Height() {
		out = append(out, k.Down, k.Up)
	}
	if d.text != "" {
		out = append(out, searchKey, nextKey, wrapKey)
		if !d.wrap {
			out = append(out, leftKey)
		}
	}
	return append(out, key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")))
}

// FullHelp implements help.KeyMap.
func (d *Document) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*Document)(nil)
