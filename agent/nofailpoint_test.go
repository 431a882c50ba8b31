//go:build !failpoints

package agent

import (
	"errors"
	"testing"
)

// TestNoFailpointsInThisBuild: a release build refuses to arm a failpoint, saying how to
// get a build that has them, rather than running without the crash a test asked for.
func TestNoFailpointsInThisBuild(t *testing.T) {
	if FailpointsBuilt {
		t.Fatal("FailpointsBuilt is true without the failpoints tag")
	}
	for _, fp := range []string{FailAfterBegin, FailWriteTemp, "after-lunch"} {
		err := CheckFailpoint(fp)
		if !errors.Is(err, ErrNoFailpoints) || err.Error() != `failpoint "`+fp+`": this build has no failpoints; build with -tags failpoints` {
			t.Fatalf("CheckFailpoint(%s) = %v", fp, err)
		}
	}
	if err := CheckFailpoint(""); err != nil {
		t.Fatalf("no failpoint refused: %v", err)
	}
	s := newScenario(t, configA(t))
	_, err := New(Config{
		Node: "worker-0", Cluster: s.c, Journal: s.h.journal, Root: s.h.root, Systemd: s.h.sd,
		Logind: s.h.lg, OS: s.h.os, StateDir: s.h.stateDir, Failpoint: FailAfterFiles,
	})
	if !errors.Is(err, ErrNoFailpoints) {
		t.Fatalf("New with a failpoint = %v, want the refusal", err)
	}
}
