package pools_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/grid"
	"github.com/mcotui/mcotui/tui/panes/pools"
)

// TestOneRemainingTime: the worker pool's time remaining reads the same in the pools
// pane's note ("remaining ~7m (from 2 nodes updated)"), its EST column and the grid's
// pace line ("worker 4 left ~7m, ..."), just after a node finished and twenty minutes
// later (the pace line said no time at all, "none done in 15m, 4 left", or its own
// from the nodes done lately, "14400/h, 4 left ~1s"): one rule, core/estimate's
// (TestComputeDecidesOnce has the burst).
func TestOneRemainingTime(t *testing.T) {
	s := model.NewStore()
	s.Apply(fixture.Small())
	var last time.Time
	s.Each(func(n *model.Node) {
		if n.Pool == "worker" && n.Done() && n.Cells[7].Since.After(last) {
			last = n.Cells[7].Since
		}
	})
	if last.IsZero() {
		t.Fatal("the fixture's worker pool has no node done")
	}
	note := regexp.MustCompile(`worker remaining ~(\S+) \(from 2 nodes updated\)`)
	row := regexp.MustCompile(`(?m)^\S*\s*worker\s.*\s~(\S+)\s*$`)
	pace := regexp.MustCompile(`pace: worker 3 left ~([^,\s]+), 1 retrying`)
	for _, at := range []time.Time{last.Add(time.Second), last.Add(20 * time.Minute), fixture.Now} {
		c := tuitest.Common(false, fixture.Small())
		c.Clock = fixture.Clock(at)
		p := pools.New(c)
		p.SetFocused(true)
		p.SetSize(200, p.Height())
		for range 2 {
			p.Update(tea.KeyPressMsg{Code: tea.KeyDown}) // infra, master, worker
		}
		g := grid.New(c)
		g.SetSize(200, 20)
		pv, gv := tuitest.Plain(p.View()), tuitest.Plain(g.View())
		n, r, g1 := note.FindStringSubmatch(pv), row.FindStringSubmatch(pv), pace.FindStringSubmatch(gv)
		if n == nil || r == nil || g1 == nil {
			t.Errorf("at %s: a remaining time is missing: note %q, EST %q, pace %q\n%s\n%s", at, n, r, g1, pv, firstLine(gv))
			continue
		}
		if n[1] != r[1] || n[1] != g1[1] {
			t.Errorf("at %s: the pools' note says ~%s, the EST column ~%s, the pace line ~%s", at, n[1], r[1], g1[1])
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
