package model_test

import (
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/nodeanno"
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

// TestJustTargetedNodeHasNotStarted: a node given a new desired config, whose agent
// has not taken it up yet, has every condition of its last update still done; its
// phase is none (not Updated, whose age would say how long ago the last update ended),
// so that IN PHASE counts nothing old, and /phase:none finds it.
func TestJustTargetedNodeHasNotStarted(t *testing.T) {
	s := model.NewStore()
	s.Apply(fixture.Small())
	const name = "ci-ln-9xsm9-worker-a-2d8tz"
	before := s.Node(name)
	if !before.Done() || before.PhaseName() == "" || before.Since.IsZero() {
		t.Fatalf("setup: %s is not done with a phase: %+v", name, before)
	}
	obj := before.Obj.DeepCopy()
	obj.Annotations[nodeanno.DesiredConfigKey] = "rendered-worker-next"
	s.Apply([]model.Event{model.NodeEvent(obj)})
	n := s.Node(name)
	if !n.Updating || n.Phase != -1 || n.PhaseName() != "" || !n.Since.IsZero() {
		t.Errorf("just targeted: updating %v, phase %d %q since %v; want updating, no phase, no age", n.Updating, n.Phase, n.PhaseName(), n.Since)
	}
	f, err := model.ParseFilter("phase:none")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(n) {
		t.Error("/phase:none does not find the node whose update has not started")
	}
}

// TestPaceOfAYoungRollout: a rollout that began within the window is paced over the
// time it has run (from about one mean gap before its first node finished), not over
// the whole window; a stall since lengthens the span.
func TestPaceOfAYoungRollout(t *testing.T) {
	young := model.Pace{Pool: "worker", Done: 6, Window: 15 * time.Minute, Span: 3 * time.Minute, Left: 6, Updating: 2}
	if young.PerHour() != 120 || young.Remaining() != 3*time.Minute {
		t.Errorf("6 nodes in 3 minutes: %v/h, %s to go; want 120/h, 3m", young.PerHour(), young.Remaining())
	}
	s := model.NewStore()
	s.Apply(fixture.Small())
	var done []time.Time
	s.Each(func(n *model.Node) {
		if n.Pool == "worker" && n.Done() {
			done = append(done, n.Cells[7].Since)
		}
	})
	first, last := done[0], done[1]
	if last.Before(first) {
		first, last = last, first
	}
	gap := last.Sub(first)
	for _, p := range s.Paces(last.Add(time.Minute), time.Hour+gap) {
		if p.Pool == "worker" && (p.Done != 2 || p.Span != time.Minute+2*gap) {
			t.Errorf("two done %s apart, a minute ago: %+v; want span %s", gap, p, time.Minute+2*gap)
		}
	}
}
