// Package dialog holds the TUI's dialogs: boxes drawn over the screen that take every
// key while open. Confirm is the one way any change reaches the cluster: it says which
// object changes and how, and nothing happens until y or enter. The others (a value to
// type, the boot image mode editor, a scrollable document such as a rollout preview or
// a config diff) end in a Confirm or simply close.
//
// Dialogs talk to the root only through messages (common.RequestMsg,
// common.ConfirmedMsg, common.CloseDialogMsg), so that the root alone decides whether
// a session may act.
package dialog

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/common"
)

// maxWidth is the widest a dialog box grows: wider, lines get hard to read.
const maxWidth = 96

// box is the size of a dialog on a screen of w×h cells: its inner width (inside border
// and padding) and the most body lines it may hold.
func box(w, h int) (inner, lines int) {
	return max(20, min(w-4, maxWidth)-4), max(3, h-4)
}

// frame draws a dialog: title, body and key hints in the dialog style, inner cells
// wide.
func frame(c *common.Common, title, body, hints string, inner int) string {
	st := c.Styles
	var b strings.Builder
	b.WriteString(st.DialogTitle.Render(ansi.Truncate(title, inner, "…")))
	if body != "" {
		b.WriteString("\n\n")
		b.WriteString(body)
	}
	if hints != "" {
		b.WriteString("\n\n")
		b.WriteString(ansi.Truncate(hints, inner, "…"))
	}
	return st.Dialog.Width(inner + 4).Render(b.String())
}

// wrap word-wraps s to w cells.
func wrap(s string, w int) string {
	return lipgloss.NewStyle().Width(w).Render(s)
}

// hints renders key bindings as "key desc  key desc", skipping disabled ones.
func hints(c *common.Common, bindings ...key.Binding) string {
	st := c.Styles
	var parts []string
	for _, b := range bindings {
		if !b.Enabled() {
			continue
		}
		h := b.Help()
		parts = append(parts, st.HelpKey.Render(h.Key)+" "+st.Dim.Render(h.Desc))
	}
	return strings.Join(parts, "   ")
}

// indent prefixes every line of s, so that a wrapped line hangs under its first.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// field is the shape the dialogs that ask for a value share (MaxUnavailable, BootMode):
// a text field (common.NewTextInput), the size of the screen it is laid out on, and
// what the last Enter refused, which the next key clears.
type field struct {
	c     *common.Common
	input textinput.Model
	err   string
	w, h  int
}

func newField(c *common.Common, prompt string) field {
	return field{c: c, input: common.NewTextInput(c, prompt)}
}

// setSize lays the field out on a w×h screen: as wide as the box, after its prompt.
func (f *field) setSize(w, h int) {
	f.w, f.h = w, h
	inner, _ := box(w, h)
	f.input.SetWidth(inner - len(f.input.Prompt) - 1)
}

// update hands msg to the text field: a key typed clears what Enter refused.
func (f *field) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	f.err = ""
	return cmd
}

// feedback writes, under the field, what the last Enter refused; else why what is
// typed is not a value yet (invalid, in invalidStyle); else ok's lines.
func (f *field) feedback(b *strings.Builder, invalid error, invalidStyle lipgloss.Style, ok func()) {
	inner, _ := box(f.w, f.h)
	switch {
	case f.err != "":
		b.WriteString(f.c.Styles.PromptErr.Render(wrap(f.err, inner)))
	case invalid != nil:
		b.WriteString(invalidStyle.Render(wrap(invalid.Error(), inner)))
	default:
		ok()
	}
}

// frame draws the dialog around body with its key hints.
func (f *field) frame(title, body string, keys ...key.Binding) string {
	inner, _ := box(f.w, f.h)
	return frame(f.c, title, body, hints(f.c, keys...), inner)
}
