package kubetest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeNow is a clock that moves a second every time it is read: a wait of many polls
// on a slow machine, without the test waiting for it.
func fakeNow() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// whole is the share of a machine with a CPU for each runnable process.
func whole() float64 { return 1 }

// TestWaitForCountsTheMachinesShare: on a machine loaded to four times its CPUs a
// wall-clock second counts as a quarter, so a 3 s budget lasts 12 s of wall time; on a
// quiet machine it lasts 3 s; and however loaded, the wait ends (minShare).
func TestWaitForCountsTheMachinesShare(t *testing.T) {
	for _, tc := range []struct {
		share    float64
		wantWall time.Duration
	}{
		{1, 3 * time.Second},
		{0.25, 12 * time.Second},
		{0.001, 48 * time.Second},
	} {
		polls := 0
		c := newFairClock(fakeNow(), func() float64 { return tc.share })
		err := waitFor(t.Context(), c, 3*time.Second, func() (bool, string) {
			polls++
			return false, "pool worker: 0 of 2 updated"
		})
		if err == nil || !strings.Contains(err.Error(), "not within 3s") || !strings.Contains(err.Error(), "0 of 2 updated") {
			t.Errorf("share %v: error %v, want it to say the budget and the last state", tc.share, err)
		}
		if c.wall() != tc.wantWall {
			t.Errorf("share %v: gave up after %s of wall time, want %s", tc.share, c.wall(), tc.wantWall)
		}
	}
	ok := 0
	if err := waitFor(t.Context(), newFairClock(fakeNow(), whole), time.Hour, func() (bool, string) { ok++; return ok == 3, "" }); err != nil {
		t.Errorf("a condition that holds at the third poll: %v", err)
	}
}

// TestWaitProgressGoesOnWhileTheMarkMoves: work that moves at every poll is waited
// for however long it takes in all, far beyond the stall limit.
func TestWaitProgressGoesOnWhileTheMarkMoves(t *testing.T) {
	n := 0
	err := waitProgress(t.Context(), newFairClock(fakeNow(), whole), 3*time.Second, func() Progress {
		n++
		return Progress{Done: n == 20, Mark: strconv.Itoa(n), State: strconv.Itoa(n) + " of 20 nodes"}
	})
	if err != nil {
		t.Fatalf("work that progressed at every poll: %v", err)
	}
}

// TestWaitProgressFailsWhenTheMarkStops: work whose mark stops moving fails once it
// has stood still for the stall limit, saying where it stopped.
func TestWaitProgressFailsWhenTheMarkStops(t *testing.T) {
	n := 0
	err := waitProgress(t.Context(), newFairClock(fakeNow(), whole), 3*time.Second, func() Progress {
		n++
		done := min(n, 5)
		return Progress{Mark: strconv.Itoa(done), State: strconv.Itoa(done) + " of 20 nodes"}
	})
	if err == nil {
		t.Fatal("work that stopped at 5 of 20: no error")
	}
	if !strings.Contains(err.Error(), "no progress for 3s (mark 5") || !strings.Contains(err.Error(), "5 of 20 nodes") {
		t.Errorf("error %q does not say where the work stopped", err)
	}
	if n > 10 {
		t.Errorf("polled %d times: the stall was found late", n)
	}
}

// TestWaitProgressEndsWithTheContext: a wait ends when its context does.
func TestWaitProgressEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := waitProgress(ctx, newFairClock(time.Now, whole), time.Hour, func() Progress { return Progress{Mark: "0", State: "nothing"} })
	if err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Fatalf("after the context ended: %v", err)
	}
}

func TestDeadlineMargin(t *testing.T) {
	for _, tc := range []struct{ left, want time.Duration }{
		{10 * time.Second, 5 * time.Second},
		{5 * time.Minute, 30 * time.Second},
		{2 * time.Hour, time.Minute},
	} {
		if got := deadlineMargin(tc.left); got != tc.want {
			t.Errorf("deadlineMargin(%s) = %s, want %s", tc.left, got, tc.want)
		}
	}
}
