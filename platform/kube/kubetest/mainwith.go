package kubetest

import (
	"fmt"
	"os"
	"testing"
)

// MainWith is Main for a test binary that needs something besides the control plane
// made once for all its tests, such as a binary built from the module under test. setup
// runs first; its error fails the test binary with the message, before the control
// plane starts and without running (or skipping) any test. teardown, when setup returns
// one, runs after the control plane has stopped, whatever the tests' outcome.
//
//	func TestMain(m *testing.M) { kubetest.MainWith(m, &env, buildBinary) }
func MainWith(m *testing.M, env **Env, setup func() (teardown func(), err error)) {
	teardown, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: FAIL: test setup: %v\n", err)
		os.Exit(1)
	}
	code := run(m, env)
	if teardown != nil {
		teardown()
	}
	os.Exit(code)
}
