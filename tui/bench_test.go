package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// BenchmarkApplyBurst10000 is a burst of 10,000 MachineConfigNode updates (every node of
// a 10,000-node cluster moves a step) applied to the model as the program receives it,
// in one eventsMsg, and the one frame drawn after it, at 200x60.
func BenchmarkApplyBurst10000(b *testing.B) {
	const n = 10000
	src := model.NewChanSource(fixture.Info, fixture.Large(n), 1)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1})
	ui.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	// Two bursts in turn, so that every iteration changes every node.
	bursts := [2]eventsMsg{{events: fixture.Burst(n, 0)}, {events: fixture.Burst(n, 1)}}
	ui.Update(bursts[1])
	_ = ui.View()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ui.Update(bursts[i%2])
		_ = ui.View()
		i++
	}
}
