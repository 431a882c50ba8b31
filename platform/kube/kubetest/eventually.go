package kubetest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// eventuallyInterval is how often Eventually and EventuallyProgress ask.
const eventuallyInterval = 100 * time.Millisecond

// Eventually polls cond every 100ms until it holds, or fails the test after timeout
// (or when the test's context ends) with what cond last said, so that a failure reads
// "waiting for <what>: not within 1m0s: <the state cond saw>". A cluster converges
// at its own pace: tests wait for a state this way rather than sleeping. timeout is for
// a step of bounded work (one write seen by an informer, one node's update) on a
// machine that gives the test's processes a CPU each; it is counted in that time
// (fairClock), so that the same work is given the same room on a shared machine that
// other builds load. For work that grows with the cluster, use EventuallyProgress.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	if err := waitFor(t.Context(), newFairClock(time.Now, machineShare), timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitFor is Eventually without the test, with the clock injected.
func waitFor(ctx context.Context, c *fairClock, timeout time.Duration, cond func() (bool, string)) error {
	tick := time.NewTicker(eventuallyInterval)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		if spent := c.tick(); spent >= timeout {
			return fmt.Errorf("not within %s (%s of wall time on this machine): %s", timeout, c.wall().Round(time.Second), last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s (the test's context ended): %s", c.wall().Round(time.Second), last)
		case <-tick.C:
		}
	}
}

// minShare bounds how far a loaded machine stretches a wait: at most 16 times its
// budget in wall time, so that a wait on a state that never comes still ends.
const minShare = 1.0 / 16

// machineShare is the share of a CPU each runnable process of this machine gets now:
// its CPUs over the run queue's average of the last minute (/proc/loadavg), 1 when
// the queue is no longer than the CPUs or the load cannot be read.
func machineShare() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 1
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil || load <= 0 {
		return 1
	}
	return max(min(1, float64(runtime.NumCPU())/load), minShare)
}

// fairClock measures a wait in the time a process had a whole CPU: each interval of
// wall time counts times the machine's share at its end. On a quiet machine it is the
// wall clock; on one loaded to four times its CPUs, a wall-clock minute counts as 15 s.
// A test's budget for bounded work so holds however busy the CI machine is, and still
// bounds the wait (minShare).
type fairClock struct {
	now         func() time.Time
	share       func() float64
	start, last time.Time
	spent       time.Duration
}

func newFairClock(now func() time.Time, share func() float64) *fairClock {
	t := now()
	return &fairClock{now: now, share: share, start: t, last: t}
}

// tick adds the time since the last tick, weighted by the share, and returns the sum.
func (c *fairClock) tick() time.Duration {
	t := c.now()
	c.spent += time.Duration(float64(t.Sub(c.last)) * max(min(c.share(), 1), minShare))
	c.last = t
	return c.spent
}

// wall is the wall time since the clock started.
func (c *fairClock) wall() time.Duration { return c.last.Sub(c.start) }

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
// a rollout that stopped is found stall after it stopped, whatever its size. stall is
// counted as Eventually's timeout is (fairClock). The failure reads "waiting for
// <what>: no progress for <stall> (mark <mark>, after <elapsed>): <state>".
func EventuallyProgress(t testing.TB, stall time.Duration, what string, cond func() Progress) {
	t.Helper()
	if err := waitProgress(t.Context(), newFairClock(time.Now, machineShare), stall, cond); err != nil {
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
func waitProgress(ctx context.Context, c *fairClock, stall time.Duration, cond func() Progress) error {
	var last Progress
	var moved time.Duration
	first := true
	tick := time.NewTicker(eventuallyInterval)
	defer tick.Stop()
	for {
		p := cond()
		if p.Done {
			return nil
		}
		spent := c.tick()
		if first || p.Mark != last.Mark {
			moved = spent
			first = false
		}
		last = p
		if spent-moved >= stall {
			return &stalledError{stall: stall, elapsed: c.wall(), last: last}
		}
		select {
		case <-ctx.Done():
			return &stalledError{stall: spent - moved, elapsed: c.wall(), last: last}
		case <-tick.C:
		}
	}
}
