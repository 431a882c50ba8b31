package grid_test

import (
	"testing"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/grid"
)

// BenchmarkGridView10000 is one frame of the grid of 10,000 nodes at 200x60, the rows
// on screen cached, as between two changes (the clock still moves the ages). Goal: well
// under 2 ms, and allocations that do not grow with the node count (compare with
// BenchmarkGridView1000).
func BenchmarkGridView10000(b *testing.B) { benchView(b, 10000, false) }

// BenchmarkGridView1000 is BenchmarkGridView10000 with a tenth of the nodes.
func BenchmarkGridView1000(b *testing.B) { benchView(b, 1000, false) }

// BenchmarkGridViewScroll10000 pages down on every frame, so every row on screen is
// rendered afresh: the worst case of a frame.
func BenchmarkGridViewScroll10000(b *testing.B) { benchView(b, 10000, true) }

func benchView(b *testing.B, n int, scroll bool) {
	c := tuitest.Common(true, fixture.Large(n))
	g := grid.New(c)
	g.SetFocused(true)
	g.SetSize(200, 60)
	_ = g.View()
	pgdn, top := key("pgdown"), key("g")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if scroll {
			// Page through the first 150 pages (9,000 rows), then start over: every
			// frame draws rows not drawn in the last 150 frames.
			if i++; i%150 == 0 {
				g.Update(top)
			} else {
				g.Update(pgdn)
			}
		}
		_ = g.View()
	}
}
