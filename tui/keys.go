package tui

import (
	"fmt"
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/common"
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
	armed := u.quitArmed
	u.quitArmed = false // a quit asked about lasts one key
	if msg.String() == "ctrl+c" {
		return u.quit() // the way out that never asks
	}
	if u.showHelp {
		switch {
		case key.Matches(msg, k.Back, k.Help, k.Quit):
			u.showHelp = false // q leaves a view, as in k9s
			return nil
		}
		return u.help.Update(msg)
	}
	switch {
	case key.Matches(msg, k.Quit) && u.view != viewMain:
		u.view = viewMain
		return nil
	case key.Matches(msg, k.Quit) && u.canGoBack():
		// k9s's way: q steps back as esc does (the detail, a filter, a pool's
		// scope), and quits only from the top, all nodes unfiltered.
		u.back()
		return nil
	case key.Matches(msg, k.Quit):
		return u.askQuit(armed)
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
	u.explainUnbound(msg, u.focused())
	return u.focused().Update(msg)
}

// askQuit quits, unless this terminal drives a rollout: then the first q says what
// quitting stops, and only a second q in a row quits.
func (u *UI) askQuit(armed bool) tea.Cmd {
	if u.drive == nil || armed {
		return u.quit()
	}
	u.quitArmed = true
	u.setNotice(fmt.Sprintf("This terminal drives the rollout of pool %s: press q again to stop driving it and quit", u.drive.pool), true)
	return nil
}

// explainUnbound says in the footer that a key does nothing in the focused component,
// rather than silently nothing: a key of an action the session does not offer says
// so, any other key points at the help.
func (u *UI) explainUnbound(msg tea.KeyPressMsg, c common.Component) {
	k := u.c.Keys
	bound := append(append(append([]key.Binding{}, k.Global()...), k.Navigation()...), c.ShortHelp()...)
	for _, g := range c.FullHelp() {
		bound = append(bound, g...)
	}
	for _, b := range bound {
		if key.Matches(msg, b) {
			return
		}
	}
	name := msg.String()
	// The pane's own actions first: a key means one action per view (r rebuilds in
	// the builds view, retries elsewhere).
	own := c.ShortHelp()
	for _, g := range c.FullHelp() {
		own = append(own, g...)
	}
	for _, b := range append(own, k.Dangerous()...) {
		if !b.Enabled() && slices.Contains(b.Keys(), name) {
			why := "the Machine Config Operator runs this cluster"
			if u.c.ReadOnly {
				why = "this session is read-only"
			}
			u.setNotice(fmt.Sprintf("%s (%s) is not offered: %s", name, b.Help().Desc, why), true)
			return
		}
	}
	u.setNotice(fmt.Sprintf("%s does nothing here: ? lists the keys", name), true)
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
	case key.Matches(msg, k.Builds):
		u.openBuilds()
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
	if u.view == viewConfigs && u.configKey(msg) {
		return nil
	}
	if u.view == viewConfigs && key.Matches(msg, k.Pause, k.MaxUnavailable, k.Preview, k.Rollback, k.Drive) {
		cmd, _ := u.actionKey(msg)
		return cmd
	}
	u.explainUnbound(msg, u.focused())
	return u.focused().Update(msg)
}

// canGoBack reports whether back has somewhere to go.
func (u *UI) canGoBack() bool {
	q := u.grid.Query()
	return u.showDetail || !q.Filter.IsZero() || q.Pool != ""
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
