package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// key handles a key press: the prompt takes every key while open, then the help
// overlay, then the global keys, then the focused pane.
func (u *UI) key(msg tea.KeyPressMsg) tea.Cmd {
	k := u.c.Keys
	if u.promptKind != promptNone {
		return u.promptKey(msg)
	}
	u.promptErr = "" // a message from the last prompt lasts until the next key
	if u.showHelp {
		switch {
		case key.Matches(msg, k.Back, k.Help):
			u.showHelp = false
			return nil
		case key.Matches(msg, k.Quit):
			return tea.Quit
		}
		return u.help.Update(msg)
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		u.openHelp()
		return nil
	case key.Matches(msg, k.Command):
		return u.openPrompt(promptCommand)
	case key.Matches(msg, k.Filter):
		u.showDetail = false
		u.setFocus(paneNodes)
		return u.openPrompt(promptFilter)
	case key.Matches(msg, k.NextPane, k.PrevPane):
		// Two places to be: the pools, or the nodes (grid or detail).
		if u.focus == panePools {
			u.setFocus(paneNodes)
		} else {
			u.setFocus(panePools)
		}
		return nil
	case key.Matches(msg, k.Back):
		u.back()
		return nil
	}
	return u.focused().Update(msg)
}

// back is esc outside prompts and help: close the detail, else clear the filter, else
// widen the grid to all pools.
func (u *UI) back() {
	q := u.grid.Query()
	switch {
	case u.showDetail:
		u.showDetail = false
		u.setFocus(paneNodes)
	case !q.Filter.IsZero():
		q.Filter = filterNone
		u.grid.SetQuery(q)
	case q.Pool != "":
		u.scope("")
	}
}
