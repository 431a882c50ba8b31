package kubetest

import (
	"context"
	"testing"
	"time"
)

// Context is the context of a test's calls to the control plane: it ends with the
// test, and a margin before the test binary's -timeout, so that a call or wait stuck on
// a cluster that will never answer fails the test with a message naming what it waited
// for, instead of the binary's panic with every goroutine's stack. It has no budget of
// its own: a loaded machine makes the work slower, not wrong, so how long the work may
// take is the caller's to derive from the work (see Eventually, EventuallyProgress).
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx := t.Context()
	dl, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return ctx
	}
	deadline, ok := dl.Deadline()
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(-deadlineMargin(time.Until(deadline))))
	t.Cleanup(cancel)
	return ctx
}

// deadlineMargin is how long before the binary's deadline a test's context ends: long
// enough for the failure to be reported and the cleanups to run (which delete objects
// with contexts of their own), a small part of what is left.
func deadlineMargin(left time.Duration) time.Duration {
	return min(max(left/10, 5*time.Second), time.Minute)
}
