package common

import "charm.land/bubbles/v2/viewport"

// NewViewport is the scrolling view the panes and dialogs that show a document share
// (the detail and boot image panes, the document dialog): bubbles' viewport on the
// TUI's own scrolling keys.
func NewViewport(c *Common) viewport.Model {
	vp := viewport.New()
	k := c.Keys
	vp.KeyMap = viewport.KeyMap{
		Up: k.Up, Down: k.Down, PageUp: k.PageUp, PageDown: k.PageDown,
		HalfPageUp: k.HalfUp, HalfPageDown: k.HalfDown,
	}
	return vp
}
