package model_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// TestPace: a pool's pace counts the nodes whose update finished within the window, at
// the pool's target, and the time the nodes left take is the pool's estimate's; a pool
// with nothing updating and nothing done lately is not rolling.
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
		for _, p := range s.Paces(now) {
			if p.Pool == "worker" {
				return p
			}
		}
		t.Fatalf("worker is not rolling at %s", now)
		return model.Pace{}
	}
	p := paceOf(last.Add(time.Minute))
	if p.Est.Pace.Done < 1 || p.Est.Left() != 4 || p.Est.Updating != 3 {
		t.Errorf("just after a node finished: %+v, want at least 1 done, 4 left, 3 updating", p)
	}
	later := last.Add(20 * time.Minute)
	est, _, _ := s.Estimate("worker", later)
	if p := paceOf(later); p.Est.Pace.Done != 0 || p.String() != "worker 3 left ~"+estimate.Round(est.Remaining)+", 1 retrying, none done in 15m" {
		t.Errorf("20 minutes later: %+v %q", p, p.String())
	}
	for _, p := range s.Paces(last) {
		if p.Pool == "infra" {
			t.Errorf("the paused infra pool, nothing updating, is said to roll: %+v", p)
		}
	}

	four := model.Pace{Pool: "worker", Est: estimate.Estimate{OK: true, Remaining: 30 * time.Minute, Updating: 2, Waiting: 6,
		Pace: estimate.Pace{Done: 4, Window: 15 * time.Minute, Span: 15 * time.Minute}}}
	if four.Est.Pace.PerHour() != 16 || four.String() != "worker 8 left ~30m, 16/h" {
		t.Errorf("4 in 15m with 8 left: %v/h, %q", four.Est.Pace.PerHour(), four.String())
	}

	// The last node left failed (its agent retrying, or not): it does not finish in
	// ~0s, and the line says which (core's estimate.Progress).
	lastOne := func(n estimate.Node) string {
		nodes := []estimate.Node{{Name: "a", Phase: estimate.Finished, Since: later.Add(-2 * time.Minute)}, {Name: "b", Phase: estimate.Finished, Since: later.Add(-time.Minute)}, n}
		r := estimate.Record{}.Add(estimate.Sample{Drain: time.Minute, Apply: time.Minute, Reboot: time.Minute, Ready: time.Minute})
		return model.Pace{Pool: "worker", Est: estimate.Compute(r, nodes, 1, later)}.String()
	}
	for n, want := range map[estimate.Node]string{
		{Name: "f", Phase: estimate.Failed, Retrying: true}: "worker 1 retrying, ",
		{Name: "f", Phase: estimate.Failed}:                 "worker 1 failed, ",
	} {
		if got := lastOne(n); !strings.HasPrefix(got, want) || strings.Contains(got, "~") {
			t.Errorf("the last node failed (retrying %t): %q, want %q… and no time", n.Retrying, got, want)
		}
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
