//go:build !failpoints

package agent

// Without the failpoints build tag there are no failpoints: New refuses to arm one, and
// (*Agent).failpoint compiles to nothing.
const failpointsBuilt = false

// crash and announcer are never called in this build (CheckFailpoint refuses every
// name); they exist so that New reads the same in both builds.
func crash(string) {}

func announcer(string) func(string) { return func(string) {} }
