package demo

import (
	"strings"
	"testing"
)

// TestNodeNames: the default names are master-N and worker-N; with OpenShiftNames each
// is as long as an installer's (ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12), shares the
// cluster's prefix, and differs from every other only in its last characters.
func TestNodeNames(t *testing.T) {
	d := &Demo{}
	if got := d.nodeName("master", 1); got != "master-1" {
		t.Errorf("master 1: %q", got)
	}
	if got := d.nodeName("worker", masters+4); got != "worker-4" {
		t.Errorf("worker 4: %q", got)
	}
	d.opts.OpenShiftNames = true
	seen := map[string]bool{}
	for i := masters; i < masters+MaxNodes; i++ {
		n := d.nodeName("worker", i)
		if len(n) != 40 || !strings.HasPrefix(n, openShiftPrefix+"worker-") {
			t.Fatalf("worker %d: %q", i, n)
		}
		if seen[n] {
			t.Fatalf("worker %d: %q taken twice", i, n)
		}
		seen[n] = true
	}
}
