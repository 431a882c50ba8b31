package phase

import (
	"errors"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
	t2 = metav1.NewTime(t0.Add(2 * time.Minute))
)

func get(t *testing.T, conds []metav1.Condition, typ mcfgv1.StateProgress) metav1.Condition {
	t.Helper()
	c, ok := Find(conds, typ)
	if !ok {
		t.Fatalf("no %s condition in %v", typ, conds)
	}
	return c
}

func TestInitialListsEveryTypeFalse(t *testing.T) {
	conds := Initial(t0)
	if len(conds) != 15 {
		t.Fatalf("%d conditions, MCO creates 15", len(conds))
	}
	for _, typ := range Columns {
		c := get(t, conds, typ)
		if c.Status != metav1.ConditionFalse || c.Reason != "NotYetOccurred" || c.Message != "This node has not yet entered the "+string(typ)+" phase" {
			t.Errorf("initial %s = %+v", typ, c)
		}
	}
}

func TestReasonOfChildNamesParent(t *testing.T) {
	for typ, want := range map[mcfgv1.StateProgress]string{
		Drained: "UpdateExecutedDrained", Cordoned: "UpdateExecutedCordoned", AppliedFilesAndOS: "UpdateExecutedAppliedFilesAndOS",
		Uncordoned: "UpdateCompleteUncordoned", UpdatePrepared: "UpdatePrepared", RebootedNode: "RebootedNode",
	} {
		if got := Reason(typ); got != want {
			t.Errorf("Reason(%s) = %s, want %s", typ, got, want)
		}
	}
}

func TestApplyWritesParentAndChild(t *testing.T) {
	conds, changed := Apply(nil, "rendered-worker-b", t1, Executing(), CordonDone())
	if !changed {
		t.Fatal("first write reported no change")
	}
	c := get(t, conds, Cordoned)
	if c.Status != metav1.ConditionTrue || c.Reason != "UpdateExecutedCordoned" || !c.LastTransitionTime.Equal(&t1) {
		t.Fatalf("Cordoned = %+v", c)
	}
	if p := get(t, conds, UpdateExecuted); p.Status != metav1.ConditionUnknown {
		t.Fatalf("UpdateExecuted = %+v", p)
	}
	// The same write again changes nothing, not even the transition time.
	again, changed := Apply(conds, "rendered-worker-b", t2, Executing(), CordonDone())
	if changed {
		t.Fatal("repeating a write reported a change")
	}
	if c := get(t, again, Cordoned); !c.LastTransitionTime.Equal(&t1) {
		t.Fatalf("repeated write moved the transition time to %v", c.LastTransitionTime)
	}
}

func TestApplyUpdatedResetsEverythingElse(t *testing.T) {
	conds, _ := Apply(nil, "rendered-worker-b", t0, Executing(), DrainDone("drain-rendered-worker-b"))
	conds, _ = Apply(conds, "rendered-worker-b", t0, Degraded("worker-0", errors.New("boom")))
	conds, _ = Apply(conds, "rendered-worker-b", t1, UpToDate("worker-0"))
	for _, typ := range []mcfgv1.StateProgress{Drained, UpdateExecuted, NodeDegraded} {
		c := get(t, conds, typ)
		if c.Status != metav1.ConditionFalse {
			t.Errorf("%s = %s after Updated, want False", typ, c.Status)
		}
		if want := "Action during update to rendered-worker-b: "; len(c.Message) < len(want) || c.Message[:len(want)] != want {
			t.Errorf("%s message %q lacks the update prefix", typ, c.Message)
		}
	}
	if u := get(t, conds, Updated); u.Status != metav1.ConditionTrue || u.Message != "Node worker-0 Updated" {
		t.Fatalf("Updated = %+v", u)
	}
	// Conditions already False keep their message.
	if c := get(t, conds, RebootedNode); c.Message != "This node has not yet entered the RebootedNode phase" {
		t.Fatalf("a False condition was rewritten: %q", c.Message)
	}
}

func TestApplyAnyPhaseWhileUpdatedFlipsUpdated(t *testing.T) {
	conds, _ := Apply(nil, "rendered-worker-a", t0, UpToDate("worker-0"))
	conds, _ = Apply(conds, "rendered-worker-b", t1, Prepared("[Reboot]", true))
	u := get(t, conds, Updated)
	if u.Status != metav1.ConditionFalse || u.Message != "This node is not updated, sensed disruption via a manual update." {
		t.Fatalf("Updated = %+v", u)
	}
}

func TestStateOf(t *testing.T) {
	cases := []struct {
		c    Condition
		want State
	}{
		{Prepared("[None]", false), Done},
		{Draining("drain-b", "uncordon-a"), InProgress},
		{DrainFailed("pod default/web-0 blocked by PodDisruptionBudget default/web"), Failed},
		{Incompatible("a", "b", "spec.fips: cannot change"), Failed},
		{RebootRequired(), InProgress},
		{DrainNotRequired(), NotStarted},
		{Degraded("w", errors.New("x")), Failed},
		{NotDegraded("w"), NotStarted},
		{ApplyFailed(errors.New("disk full")), Failed},
	}
	for _, c := range cases {
		mc := metav1.Condition{Type: string(c.c.Type), Status: c.c.Status, Message: c.c.Message}
		if got := StateOf(mc); got != c.want {
			t.Errorf("StateOf(%s %s %q) = %s, want %s", c.c.Type, c.c.Status, c.c.Message, got, c.want)
		}
	}
}
