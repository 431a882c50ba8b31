package kubetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually polls cond every 100ms until it holds, or fails the test after timeout
// (or when the test's context ends) with what cond last said, so that a failure reads
// "waiting for <what>: not within 1m0s: <the state cond saw>". A cluster converges
// at its own pace: tests wait for a state this way rather than sleeping.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: not within %s: %s", what, timeout, last)
	}
}
