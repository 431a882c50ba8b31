// Package common is what every pane shares, as soft-serve's pkg/ui/common: the styles,
// the keymap, the clock and the store, and the contract a pane fulfils.
package common

import (
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/keys"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// Clock tells the time. The TUI reads it only to draw ages (time in phase, AGE), and
// tests pin it, so a golden file does not age.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Common is shared by the root and every pane of one program. It is per program, never
// global: over SSH each session has its own styles (its own colour profile) and clock.
//
// The root owns it and may replace Styles (when the colour profile turns out to have no
// colour); panes read c.Styles at draw time and key their caches on the pointer.
type Common struct {
	Styles *styles.Styles
	Keys   *keys.KeyMap
	Clock  Clock
	// Store is read by the panes and written only by the root, in Update.
	Store *model.Store
	// Info is where the data comes from and what kind of cluster it is.
	Info model.Info
	// ReadOnly: the session changes nothing (--read-only, a read-only SSH key, or no
	// Actions at all). Panes offer no action then, and the root refuses any that
	// reaches it anyway.
	ReadOnly bool
	// CanDrive: the session has a Driver (Options.Driver), so that it can drive a
	// rollout itself when nothing else does.
	CanDrive bool

	posted []tea.Msg
}

// Post hands msg to the root, which handles it before the current message's Update
// returns. Moving between components (a key that opens a dialog, a dialog that asks
// for confirmation) goes this way rather than through a command, which Bubble Tea runs
// on another goroutine: a key typed right after would otherwise reach the screen it
// was typed over, not the one it was typed for (a paste over SSH, a test).
func (c *Common) Post(msg tea.Msg) { c.posted = append(c.posted, msg) }

// TakePosted returns and forgets the posted messages; only the root calls it.
func (c *Common) TakePosted() []tea.Msg {
	p := c.posted
	c.posted = nil
	return p
}

// Offered reports whether the session offers actions of kind k (see action.Offered).
// Driving also needs a Driver.
func (c *Common) Offered(k action.Kind) bool {
	if k == action.Drive && !c.CanDrive {
		return false
	}
	return action.Offered(k, c.Info.MCO, c.ReadOnly)
}

// Component is a pane: a model with its own keymap help, told its size by the root.
// Components are pointers updated in place: the grid's row cache is not something to
// copy on every message.
type Component interface {
	help.KeyMap
	SetSize(width, height int)
	Update(msg tea.Msg) tea.Cmd
	View() string
}

// Messages panes send the root, which owns navigation between panes.
type (
	// SelectPoolMsg scopes the node grid to a pool ("" for all pools).
	SelectPoolMsg struct{ Pool string }
	// OpenNodeMsg opens a node's detail.
	OpenNodeMsg struct{ Name string }
	// OpenDialogMsg shows a dialog over the screen, in place of any other.
	OpenDialogMsg struct{ Dialog Dialog }
	// CloseDialogMsg closes the dialog.
	CloseDialogMsg struct{}
	// ConfirmedMsg is a change the user confirmed: the root makes it.
	ConfirmedMsg struct{ Request action.Request }
	// RequestMsg asks the root to confirm a change with the user.
	RequestMsg struct{ Request action.Request }
)

// Dialog is a box drawn over the screen's centre that takes every key while open. It
// ends by sending CloseDialogMsg (or ConfirmedMsg, OpenDialogMsg for the next step).
// SetSize is the screen's size, which the box must fit.
type Dialog interface {
	Component
	Title() string
}

// Cmd wraps a message in a command.
func Cmd(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }
