package help_test

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/help"
)

func groups(t *testing.T) []help.Group {
	c := tuitest.Common(true, fixture.Small())
	k := c.Keys
	return []help.Group{
		help.FromBindings("Global", k.Global()...),
		help.FromBindings("Move", k.Navigation()...),
		help.FromBindings("Repeats", k.Up, k.Up, k.Down), // a binding listed twice shows once
		help.Pairs("Filter (/)", "degraded", "degraded nodes", "pool:NAME", "in pool NAME"),
	}
}

// TestHelpView: three columns when wide, one that scrolls when small.
func TestHelpView(t *testing.T) {
	for _, tt := range []struct {
		name string
		w, h int
		down int
	}{{"wide", 200, 60, 0}, {"narrow", 50, 20, 0}, {"narrow-scrolled", 50, 20, 5}} {
		t.Run(tt.name, func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			h := help.New(c)
			h.SetSize(tt.w, tt.h)
			h.SetGroups(groups(t))
			for range tt.down {
				h.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			}
			tuitest.Golden(t, h.View())
		})
	}
}
