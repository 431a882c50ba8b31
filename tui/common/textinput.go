package common

import "charm.land/bubbles/v2/textinput"

// NewTextInput is the one-line field the dialogs that ask for a value share (a pool's
// maxUnavailable, the boot image selector): bubbles' textinput behind prompt, in the
// TUI's prompt style, dimmed while not focused. The cursor does not blink: a blinking
// cursor is a timer that redraws twice a second for nothing, and it would make every
// golden file depend on when it was taken.
func NewTextInput(c *Common, prompt string) textinput.Model {
	ti := textinput.New()
	s := textinput.DefaultStyles(true)
	s.Focused.Prompt = c.Styles.Prompt
	s.Blurred.Prompt = c.Styles.Dim
	s.Cursor.Blink = false
	ti.SetStyles(s)
	ti.Prompt = prompt
	return ti
}
