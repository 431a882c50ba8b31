// Package common is what every pane shares, as soft-serve's pkg/ui/common: the styles,
// the keymap, the clock and the store, and the contract a pane fulfils.
package common

import (
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

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
)

// Cmd wraps a message in a command.
func Cmd(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }
