package model_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// TestLargePoolEstimateOffTheLoop: a pool of 1,000 members or more has its first
// estimate at once, then, once it has aged, keeps showing it while the new one is
// computed on another goroutine (the frame that found it aged used to pay for ordering
// every member: 60 ms at 15,000, and a key pressed then waited behind it), and shows
// the new one once it has landed. A small pool's aged estimate is recomputed at once.
func TestLargePoolEstimateOffTheLoop(t *testing.T) {
	const n = 1500
	s := model.NewStore()
	s.Apply(fixture.Large(n))
	now := fixture.Now
	first := estimateOf(s, "worker", now)
	if s.EstimateUnderWay("worker") {
		t.Fatalf("the first estimate of a pool of %d was not computed at once", n)
	}

	// Every node moves a step; within the estimate's age nothing is recomputed.
	s.Apply(fixture.Burst(n, 1))
	if got := estimateOf(s, "worker", now.Add(time.Second)); !reflect.DeepEqual(got, first) {
		t.Errorf("recomputed before it aged: %+v, was %+v", got.Est, first.Est)
	}

	// A large pool's estimate is kept longer than a small one's.
	if s.Estimate("worker", now.Add(10*time.Second)); s.EstimateUnderWay("worker") {
		t.Error("a pool of 1,500 members recomputed its estimate after 10 s")
	}

	later := now.Add(time.Minute)
	if aged := estimateOf(s, "worker", later); !reflect.DeepEqual(aged, first) {
		t.Errorf("the aged estimate was not shown while the new one is computed: %+v, was %+v", aged.Est, first.Est)
	}
	if !s.EstimateUnderWay("worker") {
		t.Fatal("no recomputation under way off the program's goroutine")
	}
	// What lands is the estimate of the nodes as they are now, as a store that
	// computed it at once has it.
	again := model.NewStore()
	again.Apply(fixture.Large(n))
	again.Apply(fixture.Burst(n, 1))
	want := estimateOf(again, "worker", later)
	if reflect.DeepEqual(want, first) {
		t.Fatalf("the burst changed nothing the estimate counts (%+v): the test shows nothing", first.Est)
	}
	s.WaitEstimate("worker")
	if got := estimateOf(s, "worker", later); !reflect.DeepEqual(got, want) {
		t.Errorf("once landed: %+v, want %+v", got.Est, want.Est)
	}
	if s.EstimateUnderWay("worker") {
		t.Error("a recomputation still under way after it landed")
	}

	// A pool of 3: at once.
	s.Estimate("master", now)
	s.Estimate("master", later)
	if s.EstimateUnderWay("master") {
		t.Error("a pool of 3 members is recomputed off the program's goroutine")
	}
}

// estimated is what Store.Estimate says of a pool.
type estimated struct {
	Est   estimate.Estimate
	Nodes map[string]estimate.Node
}

func estimateOf(s *model.Store, pool string, now time.Time) estimated {
	est, nodes, _ := s.Estimate(pool, now)
	return estimated{est, nodes}
}

// TestSmallPoolEstimateFollowsItsCounts: a small pool's estimate is kept for a few
// seconds against bursts of frames, but not past a member's move in the pool's counts
// (seen in the demo: "pace: master 2 left" beside the master row's 2/3 done): the next
// frame's estimate is the one a fresh store computes.
func TestSmallPoolEstimateFollowsItsCounts(t *testing.T) {
	const n = 60
	s := model.NewStore()
	s.Apply(fixture.Large(n))
	now := fixture.Now
	first := estimateOf(s, "worker", now)
	s.Apply(fixture.Burst(n, 1))
	got := estimateOf(s, "worker", now.Add(time.Second))

	again := model.NewStore()
	again.Apply(fixture.Large(n))
	again.Apply(fixture.Burst(n, 1))
	want := estimateOf(again, "worker", now.Add(time.Second))
	if reflect.DeepEqual(want, first) {
		t.Fatalf("the burst changed nothing the estimate counts (%+v): the test shows nothing", first.Est)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("within its age, after members moved: %+v, want %+v", got.Est, want.Est)
	}
}
