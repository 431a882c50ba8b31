package kubetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// eventuallyInterval is how often Eventually and EventuallyProgress ask.
const eventuallyInterval = 100 * time.Millisecond

// Eventually polls cond every 100ms until it holds, or fails the test after timeout
// (or when the test's context ends) with what cond last said, so that a failure reads
// "waiting for <what>: not within 1m0s: <the state cond saw>". A cluster converges
// at its own pace: tests wait for a state this way rather than sleeping. timeout is for
// a step of bounded work (one write seen by an informer, one node's update); for work
// that grows with the cluster, use EventuallyProgress.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), eventuallyInterval, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: not within %s: %s", what, timeout, last)
	}
}

// Progress is what EventuallyProgress's condition reports: whether the wait is over,
// a mark of how far the work has come (a count of nodes done, a resourceVersion, a
// phase: any value that changes when the work moves) and the state to report on
// failure.
type Progress struct {
	Done  bool
	Mark  string
	State string
}

// EventuallyProgress polls cond every 100ms until it reports Done, and fails the test
// only when the mark has not moved for stall (or the test's context ends): a rollout
// of fifty nodes on a machine that other processes load takes as long as it takes, but
// a rollout that stopped is found stall after it stopped, whatever its size. The
// failure reads "waiting for <what>: no progress for <stall> (mark <mark>, after
// <elapsed>): <state>".
func EventuallyProgress(t testing.TB, stall time.Duration, what string, cond func() Progress) {
	t.Helper()
	if err := waitProgress(t.Context(), time.Now, stall, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// stalledError says that a wait's mark stopped moving.
type stalledError struct {
	stall, elapsed time.Duration
	last           Progress
}

func (e *stalledError) Error() string {
	return "no progress for " + e.stall.String() + " (mark " + e.last.Mark + ", after " + e.elapsed.Round(time.Second).String() + "): " + e.last.State
}

// waitProgress is EventuallyProgress without the test, with the clock injected, so
// that its rule can be tested without waiting.
func waitProgress(ctx context.Context, now func() time.Time, stall time.Duration, cond func() Progress) error {
	start := now()
	var last Progress
	moved := start
	first := true
	tick := time.NewTicker(eventuallyInterval)
	defer tick.Stop()
	for {
		p := cond()
		if p.Done {
			return nil
		}
		t := now()
		if first || p.Mark != last.Mark {
			moved = t
			first = false
		}
		last = p
		if t.Sub(moved) >= stall {
			return &stalledError{stall: stall, elapsed: t.Sub(start), last: last}
		}
		select {
		case <-ctx.Done():
			return &stalledError{stall: t.Sub(moved), elapsed: t.Sub(start), last: last}
		case <-tick.C:
		}
	}
}
