package controller

import (
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestOnlyCountsDiffer: the progress of a rollout (updated, ready, unavailable counts)
// may wait for the status interval; a change of a condition, the configuration or the
// machine or degraded count may not.
func TestOnlyCountsDiffer(t *testing.T) {
	base := mcfgv1.MachineConfigPoolStatus{
		MachineCount: 10, UpdatedMachineCount: 3, ReadyMachineCount: 3, UnavailableMachineCount: 2,
		Conditions: []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdating, Status: corev1.ConditionTrue}},
	}
	for _, tc := range []struct {
		name   string
		change func(*mcfgv1.MachineConfigPoolStatus)
		want   bool
	}{
		{"one more updated", func(s *mcfgv1.MachineConfigPoolStatus) { s.UpdatedMachineCount++; s.ReadyMachineCount++ }, true},
		{"one less unavailable", func(s *mcfgv1.MachineConfigPoolStatus) { s.UnavailableMachineCount-- }, true},
		{"a node joined", func(s *mcfgv1.MachineConfigPoolStatus) { s.MachineCount++ }, false},
		{"a node degraded", func(s *mcfgv1.MachineConfigPoolStatus) { s.DegradedMachineCount++ }, false},
		{"updated", func(s *mcfgv1.MachineConfigPoolStatus) { s.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"configuration", func(s *mcfgv1.MachineConfigPoolStatus) { s.Configuration.Name = "rendered-x-1" }, false},
	} {
		s := *base.DeepCopy()
		tc.change(&s)
		if got := onlyCountsDiffer(s, base); got != tc.want {
			t.Errorf("%s: onlyCountsDiffer = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestStatusWait: a pool whose status Sync never wrote waits for nothing; after a
// write, a change of its counts waits for what is left of the interval, and nothing
// once it is over. Without a Requeue nothing ever waits, since nothing would write
// the held-back status.
func TestStatusWait(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	d := newDriver(nil, driverOptions{Clock: clk, StatusInterval: time.Second, Requeue: func(string, time.Duration) {}})
	if w := d.statusWait("p", clk.Now()); w != 0 {
		t.Errorf("never written: wait %s, want 0", w)
	}
	d.statusWritten["p"] = clk.Now()
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	if w := d.statusWait("p", clk.Now()); w != 700*time.Millisecond {
		t.Errorf("300ms after a write: wait %s, want 700ms", w)
	}
	if w := d.statusWait("q", clk.Now()); w != 0 {
		t.Errorf("another pool: wait %s, want 0", w)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if w := d.statusWait("p", clk.Now()); w != 0 {
		t.Errorf("after the interval: wait %s, want 0", w)
	}
	plain := newDriver(nil, driverOptions{Clock: clk, StatusInterval: time.Second})
	plain.statusWritten["p"] = clk.Now()
	if w := plain.statusWait("p", clk.Now()); w != 0 {
		t.Errorf("without Requeue: wait %s, want 0", w)
	}
}
