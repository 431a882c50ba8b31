package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

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
	d.inner = inner
	content := d.body(inner)
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

// View implements common.Component.
func (d *Document) View() string {
	title := d.title
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
	return append(out, key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")))
}

// FullHelp implements help.KeyMap.
func (d *Document) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*Document)(nil)
