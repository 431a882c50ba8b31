package model_test

import (
	"testing"
	"time"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// TestPace: a pool's pace counts the nodes whose update finished within the window, at
// the pool's target, and says how long the nodes left take at it; a pool with nothing
// updating and nothing done lately is not rolling.
func TestPace(t *testing.T) {
	s := model.NewStore()
	s.Apply(fixture.Small())
	var done []time.Time
	s.Each(func(n *model.Node) {
		if n.Pool == "worker" && n.Done() {
			done = append(done, n.Cells[7].Since)
		}
	})
	if len(done) != 2 {
		t.Fatalf("the fixture's worker pool has %d nodes done, want 2", len(done))
	}
	last := done[0]
	if done[1].After(last) {
		last = done[1]
	}
	paceOf := func(now time.Time) model.Pace {
		for _, p := range s.Paces(now, 15*time.Minute) {
			if p.Pool == "worker" {
				return p
			}
		}
		t.Fatalf("worker is not rolling at %s", now)
		return model.Pace{}
	}
	p := paceOf(last.Add(time.Minute))
	if p.Done < 1 || p.Left != 4 || p.Updating != 3 {
		t.Errorf("just after a node finished: %+v, want at least 1 done, 4 left, 3 updating", p)
	}
	if p := paceOf(last.Add(20 * time.Minute)); p.Done != 0 || p.String() != "worker none done in 15m, 4 left" {
		t.Errorf("20 minutes later: %+v %q", p, p.String())
	}
	for _, p := range s.Paces(last, 15*time.Minute) {
		if p.Pool == "infra" {
			t.Errorf("the paused infra pool, nothing updating, is said to roll: %+v", p)
		}
	}

	four := model.Pace{Pool: "worker", Done: 4, Window: 15 * time.Minute, Left: 8, Updating: 2}
	if four.PerHour() != 16 || four.Remaining() != 30*time.Minute || four.String() != "worker 16/h, 8 left ~30m" {
		t.Errorf("4 in 15m with 8 left: %v/h, %s, %q", four.PerHour(), four.Remaining(), four.String())
	}
}
