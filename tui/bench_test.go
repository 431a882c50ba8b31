package tui

import (
	"strings"
	"testing"
	"time"

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

// BenchmarkKeyInBurst5000 is what a keypress costs when it arrives during a burst, at
// 5,000 nodes and 200x60: the program handles messages in order, so the key waits for
// the message ahead of it, which waitForEvents took from the 1,000 MachineConfigNode
// updates pending on the source (to the last 1,000 workers, off screen, as
// BenchmarkTUIScale writes them), for its Apply and its frame, then for its own update
// (`?`, the help overlay) and frame. key-ms is that whole wait, burst-ms the message's
// part and help-ms the key's own; the rest of the burst is applied and the overlay
// closed again untimed, so that every iteration opens it. The clock moves past the
// pools' estimate's age (largeEstimateTTL in tui/model) before each burst, so that every
// iteration's frames find it aged, as one frame in so many seconds does in a program:
// at 15,000 nodes its recomputation was most of the key's wait (docs/benchmarks.md).
// Goal: key-ms well under 50 ms.
func BenchmarkKeyInBurst5000(b *testing.B) { benchKeyInBurst(b, 5000) }

// BenchmarkKeyInBurst15000 is BenchmarkKeyInBurst5000 at 15,000 nodes, the size
// BenchmarkTUIScale runs at in make bench.
func BenchmarkKeyInBurst15000(b *testing.B) { benchKeyInBurst(b, 15000) }

func benchKeyInBurst(b *testing.B, n int) {
	const burst = 1000
	src := model.NewChanSource(fixture.Info, fixture.Large(n), burst)
	clock := &movingClock{now: fixture.Now}
	ui := New(src, Options{Clock: clock, Refresh: -1})
	ui.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	// Two bursts in turn, so that every iteration changes every node it touches.
	bursts := [2][]model.Event{fixture.Burst(n, 0)[n-burst:], fixture.Burst(n, 1)[n-burst:]}
	ui.Update(eventsMsg{events: bursts[1]})
	_ = ui.View()
	help := tea.KeyPressMsg{Code: '?', Text: "?"}
	esc := tea.KeyPressMsg{Code: tea.KeyEscape}
	var burstT, helpT time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clock.add(31 * time.Second)
		src.Send(bursts[i%2]...)
		t0 := time.Now()
		ui.Update(ui.waitForEvents()())
		_ = ui.View()
		t1 := time.Now()
		ui.Update(help)
		if v := ui.View(); i == 0 && !strings.Contains(v.Content, "esc or ? to close") {
			b.Fatalf("? did not open the help overlay:\n%s", v.Content)
		}
		t2 := time.Now()
		ui.Update(esc)
		_ = ui.View()
		for len(src.Events()) > 0 {
			ui.Update(ui.waitForEvents()())
			_ = ui.View()
		}
		burstT += t1.Sub(t0)
		helpT += t2.Sub(t1)
		i++
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(i) }
	b.ReportMetric(ms(burstT), "burst-ms")
	b.ReportMetric(ms(helpT), "help-ms")
	b.ReportMetric(ms(burstT+helpT), "key-ms")
}
