package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// key handles a key press: the prompt takes every key while open, then a dialog, then
// the help overlay, then the global keys, then the view's own keys (actions), then the
// focused pane.
func (u *UI) key(msg tea.KeyPressMsg) tea.Cmd {
	k := u.c.Keys
	if u.promptKind != promptNone {
		return u.promptKey(msg)
	}
	u.promptErr = "" // a message from the last prompt lasts until the next key
	if u.dialog != nil {
		if msg.String() == "ctrl+c" {
			return u.quit()
		}
		return u.dialog.Update(msg)
	}
	u.notice = "" // so does an action's outcome
	if u.showHelp {
		switch {
		case key.Matches(msg, k.Back, k.Help):
			u.showHelp = false
			return nil
		case key.Matches(msg, k.Quit):
			return u.quit()
		}
		return u.help.Update(msg)
	}
	switch {
	case key.Matches(msg, k.Quit):
		return u.quit()
	case key.Matches(msg, k.Help):
		u.openHelp()
		return nil
	case key.Matches(msg, k.Command):
		return u.openPrompt(promptCommand)
	case key.Matches(msg, k.Filter):
		u.view = viewMain
		u.showDetail = false
		u.setFocus(paneNodes)
		return u.openPrompt(promptFilter)
	case u.view != viewMain:
		return u.viewKey(msg)
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
	if cmd, ok := u.actionKey(msg); ok {
		return cmd
	}
	return u.focused().Update(msg)
}

// viewKey handles a key in the configs or boot images view: esc goes back, b and c
// switch views, the pool keys act on the configs' pool, the rest is the pane's.
func (u *UI) viewKey(msg tea.KeyPressMsg) tea.Cmd {
	k := u.c.Keys
	switch {
	case key.Matches(msg, k.Main):
		u.view = viewMain
		return nil
	case key.Matches(msg, k.BootImages):
		u.view = viewBootImages
		return nil
	case key.Matches(msg, k.Configs):
		if u.view == viewConfigs {
			return u.configs.Update(msg)
		}
		if u.configs.Pool() == "" {
			if p := u.currentPool(); p != nil {
				u.configs.SetPool(p.Name)
			} else if ps := u.c.Store.Pools(); len(ps) > 0 {
				u.configs.SetPool(ps[0].Name)
			}
		}
		u.view = viewConfigs
		return nil
	}
	if u.view == viewConfigs && key.Matches(msg, k.Pause, k.MaxUnavailable, k.Preview, k.Rollback, k.Drive) {
		cmd, _ := u.actionKey(msg)
		return cmd
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
