package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/dialog"
)

// switchContext is :ctx: without a name it lists the kubeconfig's contexts; with one it
// ends this program so that its runner opens the TUI again on that context (SwitchTo),
// in the same terminal, as k9s's :ctx does. A cluster's informers, actions and Lease
// are the context's own, so the program over them is too.
func (u *UI) switchContext(name string) tea.Cmd {
	ctxs := u.opts.Contexts
	if len(ctxs) == 0 {
		u.setNotice("this session cannot switch contexts (it was opened on one cluster)", true)
		return nil
	}
	if name == "" {
		var b strings.Builder
		for _, c := range ctxs {
			mark := "  "
			if c == u.info.Context {
				mark = "* "
			}
			b.WriteString(mark + c + "\n")
		}
		b.WriteString("\n:ctx NAME opens the TUI on context NAME.")
		u.openDialog(dialog.NewText(u.c, "Contexts of the kubeconfig", b.String(), false))
		return nil
	}
	switch {
	case !slices.Contains(ctxs, name):
		u.promptErr = fmt.Sprintf("no context %q in the kubeconfig: %s", name, strings.Join(ctxs, ", "))
		return nil
	case name == u.info.Context:
		u.setNotice("already on context "+name, false)
		return nil
	case u.drive != nil:
		u.setNotice(fmt.Sprintf("this terminal drives the rollout of pool %s: stop it (%s) before switching context", u.drive.pool, u.c.Keys.Drive.Help().Key), true)
		return nil
	}
	u.switchTo = name
	return u.quit()
}

// SwitchTo is the kubeconfig context the user switched to with :ctx, once the program
// has ended; "" when it ended otherwise. Its runner opens the TUI again there.
func (u *UI) SwitchTo() string { return u.switchTo }
