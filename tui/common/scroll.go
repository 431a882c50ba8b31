package common

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/keys"
)

// Scroll moves a pane's viewport for the keys and mouse wheel every scrolling pane
// shares: the keymap's top and bottom, and the viewport's own line and page keys. Other
// messages leave it alone, so a pane calls Scroll after handling its own keys.
func Scroll(vp *viewport.Model, k *keys.KeyMap, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Top):
			vp.GotoTop()
			return nil
		case key.Matches(msg, k.Bottom):
			vp.GotoBottom()
			return nil
		}
	case tea.MouseWheelMsg:
	default:
		return nil
	}
	var cmd tea.Cmd
	*vp, cmd = vp.Update(msg)
	return cmd
}
