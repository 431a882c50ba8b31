package imagemode

import (
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func build(name string, conds ...string) *mcfgv1.MachineOSBuild {
	b := &mcfgv1.MachineOSBuild{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.MachineOSConfig.Name = "mosc-1"
	b.Spec.MachineConfig.Name = "rendered-worker-1"
	for _, c := range conds {
		b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue})
	}
	return b
}

// TestWaitingAsMCO is the image mode cases of MCO's TestCalculateStatus
// (pkg/controller/node/status_test.go): the pool's Updating message for each state of
// its MachineOSConfig and build, paused or not, word for word.
func TestWaitingAsMCO(t *testing.T) {
	mosc := &mcfgv1.MachineOSConfig{ObjectMeta: metav1.ObjectMeta{Name: "mosc-1"}}
	mosc.Spec.MachineConfigPool.Name = "worker"
	for _, tt := range []struct {
		name    string
		paused  bool
		mosb    *mcfgv1.MachineOSBuild
		updated bool
		want    string
	}{
		{"pool paused, mosc exists but no mosb, waiting for build to start", true, nil, false, "Pool is paused; waiting for a new OS image build to start (mosc: mosc-1)"},
		{"pool paused, mosc but is in initial state", true, build("mosb-1"), false, "Pool is paused; OS image build has been created but not yet started (mosb: mosb-1)"},
		{"pool paused, build prepared", true, build("mosb-1", "Prepared"), false, "Pool is paused; OS image build has been prepared but will not rollout (mosb: mosb-1)"},
		{"pool paused, build in progress", true, build("mosb-1", "Prepared", "Building"), false, "Pool is paused; OS image build in progress (mosb: mosb-1)"},
		{"pool paused, build failed", true, build("mosb-1", "Prepared", "Failed"), false, "Pool is paused; OS image build failed (mosb: mosb-1)"},
		{"pool paused, build interrupted", true, build("mosb-1", "Interrupted"), false, "Pool is paused; OS image build was interrupted (mosb: mosb-1)"},
		{"mosc but no mosb", false, nil, false, "Pool is waiting for a new OS image build to start (mosc: mosc-1)"},
		{"build prepared", false, build("mosb-1", "Prepared"), false, "Pool is waiting for OS image build to start (mosb: mosb-1)"},
		{"build in progress", false, build("mosb-1", "Prepared", "Building"), false, "Pool is waiting for OS image build to complete (mosb: mosb-1)"},
		{"build succeeded, nodes to update", false, build("mosb-1", "Prepared", "Succeeded"), false, "Pool is waiting for nodes to apply OS image (mosb: mosb-1)"},
		{"build succeeded, all updated", false, build("mosb-1", "Prepared", "Succeeded"), true, ""},
		{"build failed", false, build("mosb-1", "Prepared", "Failed"), false, "Pool update stopped due to OS image build failure (mosb: mosb-1)"},
		{"build interrupted", false, build("mosb-1", "Interrupted"), false, "Pool update stopped due to OS image build being interrupted (mosb: mosb-1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{Paused: tt.paused}}
			if got := Waiting(pool, mosc, tt.mosb, tt.updated); got != tt.want {
				t.Errorf("Waiting = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Waiting(&mcfgv1.MachineConfigPool{}, nil, nil, false); got != "" {
		t.Errorf("a pool without image mode waits for %q", got)
	}
}

// TestBuildRow: the columns `oc get machineosbuilds` prints, then pool, config and the
// build's duration (to now while it runs).
func TestBuildRow(t *testing.T) {
	now := time.Date(2026, 8, 20, 14, 45, 0, 0, time.UTC)
	b := build("worker-abc", "Prepared", "Succeeded")
	b.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: "Building", Status: metav1.ConditionFalse})
	b.Status.BuildStart = &metav1.Time{Time: now.Add(-9 * time.Minute)}
	b.Status.BuildEnd = &metav1.Time{Time: now.Add(-3 * time.Minute)}
	mosc := &mcfgv1.MachineOSConfig{}
	mosc.Spec.MachineConfigPool.Name = "worker"
	got := BuildRow(b, mosc, now)
	want := []string{"worker-abc", "True", "False", "True", "", "", "10m", "worker", "rendered-worker-1", "6m"}
	if len(got) != len(BuildColumns) || len(got) != len(want) {
		t.Fatalf("row %q does not fit columns %q", got, BuildColumns)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s = %q, want %q", BuildColumns[i], got[i], want[i])
		}
	}
	b.Status.BuildEnd = nil
	if d := Duration(b, now); d != "9m" {
		t.Errorf("running build's duration %q, want 9m", d)
	}
	if s := BuildState(build("x", "Prepared", "Building")); s != Building || s.Done() {
		t.Errorf("state %s", s)
	}
}

// TestPoolWait reads MCO's Updating messages (TestCalculateStatus's) back into a word.
func TestPoolWait(t *testing.T) {
	for msg, want := range map[string]string{
		"Pool is waiting for OS image build to complete (mosb: mosb-1)":    "build",
		"Pool is paused; OS image build in progress (mosb: mosb-1)":        "build",
		"Pool is waiting for a new OS image build to start (mosc: mosc-1)": "build",
		"Pool update stopped due to OS image build failure (mosb: mosb-1)": "failed",
		"Pool is paused; OS image build was interrupted (mosb: mosb-1)":    "failed",
		"All nodes are updating to MachineConfig rendered-worker-1":        "",
		"Pool is waiting for nodes to apply OS image (mosb: mosb-1)":       "",
	} {
		p := &mcfgv1.MachineConfigPool{}
		p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdating, Status: "True", Message: msg}}
		if got, waiting := PoolWait(p); got != want || waiting != (want != "") {
			t.Errorf("%q: %q %t, want %q", msg, got, waiting, want)
		}
	}
}
