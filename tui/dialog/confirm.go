package dialog

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
)

// Confirm asks the user to confirm one change, saying exactly what it writes: the
// object, each field from its old value to its new one, and what the cluster then does.
// y or enter confirms (common.ConfirmedMsg), n or esc cancels.
type Confirm struct {
	c    *common.Common
	req  action.Request
	w, h int
}

// NewConfirm returns the confirmation of req.
func NewConfirm(c *common.Common, req action.Request) *Confirm {
	return &Confirm{c: c, req: req}
}

// Request is the change to confirm.
func (d *Confirm) Request() action.Request { return d.req }

// Title implements common.Dialog.
func (d *Confirm) Title() string { return d.req.Title }

// SetSize implements common.Component.
func (d *Confirm) SetSize(w, h int) { d.w, d.h = w, h }

// Update implements common.Component.
func (d *Confirm) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, d.c.Keys.Confirm):
		d.c.Post(common.ConfirmedMsg{Request: d.req})
		return nil
	case key.Matches(k, d.c.Keys.Deny):
		d.c.Post(common.CloseDialogMsg{})
		return nil
	}
	return nil
}

// View implements common.Component.
func (d *Confirm) View() string {
	st := d.c.Styles
	inner, _ := box(d.w, d.h)
	var b strings.Builder
	b.WriteString(st.Label.Render("Changes ") + st.Bold.Render(d.req.Object))
	for _, c := range d.req.Changes {
		b.WriteString("\n")
		b.WriteString(indent(wrap(c, inner-2), "  "))
	}
	for _, e := range d.req.Effects {
		b.WriteString("\n\n")
		b.WriteString(wrap(e, inner))
	}
	return frame(d.c, d.req.Title+"?", b.String(), hints(d.c, d.c.Keys.Confirm, d.c.Keys.Deny), inner)
}

// ShortHelp implements help.KeyMap.
func (d *Confirm) ShortHelp() []key.Binding { return []key.Binding{d.c.Keys.Confirm, d.c.Keys.Deny} }

// FullHelp implements help.KeyMap.
func (d *Confirm) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*Confirm)(nil)
