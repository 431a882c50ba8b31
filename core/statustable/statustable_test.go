package statustable_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/statustable"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestPoolRow(t *testing.T) {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Minute))}}
	p.Status.Configuration.Name = "rendered-worker-a"
	p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdated, Status: corev1.ConditionTrue}}
	p.Status.MachineCount, p.Status.ReadyMachineCount, p.Status.UpdatedMachineCount = 3, 2, 1
	got := statustable.PoolRow(p, now)
	want := []any{"worker", "rendered-worker-a", "True", "", "", int32(3), int32(2), int32(1), int32(0), "90m"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PoolRow: %#v, want %#v", got, want)
	}
	if len(got) != len(statustable.PoolColumns) {
		t.Errorf("PoolRow has %d cells for %d columns", len(got), len(statustable.PoolColumns))
	}
}

func TestNodeRows(t *testing.T) {
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	m.Spec.Pool.Name, m.Spec.ConfigVersion.Desired = "worker", "rendered-worker-b"
	m.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: "rendered-worker-a"}
	m.Status.Conditions = []metav1.Condition{
		{Type: string(mcfgv1.MachineConfigNodeUpdated), Status: metav1.ConditionFalse},
		{Type: string(mcfgv1.MachineConfigNodeUpdateDrained), Status: metav1.ConditionUnknown},
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{
		nodeanno.DesiredConfigKey: "rendered-worker-b", nodeanno.CurrentConfigKey: "rendered-worker-b"}}}

	for _, wide := range []bool{false, true} {
		rows := []statustable.NodeRow{statustable.MCNRow(m, nil, wide, now), statustable.UnlistedRow(n, "worker", wide, now)}
		statustable.SortRows(rows)
		cols := len(statustable.NodeColumns(wide))
		if rows[0].Name != "a" || rows[1].Name != "b" {
			t.Fatalf("wide %v: rows not by name: %v", wide, rows)
		}
		for _, r := range rows {
			if len(r.Cells) != cols {
				t.Errorf("wide %v: row %s has %d cells for %d columns", wide, r.Name, len(r.Cells), cols)
			}
		}
		if got, want := fmt.Sprint(rows[0].Cells[:6]), "[a worker rendered-worker-b rendered-worker-b  <unknown>]"; got != want {
			t.Errorf("wide %v: unlisted row %s, want %s", wide, got, want)
		}
		if got, want := fmt.Sprint(rows[1].Cells[:6]), "[b worker rendered-worker-b rendered-worker-a False <unknown>]"; got != want {
			t.Errorf("wide %v: MachineConfigNode row %s, want %s", wide, got, want)
		}
		if wide && rows[1].Cells[6+7] != "Unknown" { // DRAINEDNODE
			t.Errorf("wide: DRAINEDNODE of b is %q, want Unknown", rows[1].Cells[13])
		}
	}
}

// TestNodeRowImages: -o wide ends with the node's image mode annotations, desiredImage
// and currentImage (MCO's node controller and daemon write them), empty without.
func TestNodeRowImages(t *testing.T) {
	const desired, current = "registry.example.com/ocl/os@sha256:bb", "registry.example.com/ocl/os@sha256:aa"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{
		nodeanno.DesiredImageKey: desired, nodeanno.CurrentImageKey: current}}}
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	cols := statustable.NodeColumns(true)
	if got := fmt.Sprint(cols[len(cols)-2:]); got != "[DESIREDIMAGE CURRENTIMAGE]" {
		t.Fatalf("last wide columns %s", got)
	}
	for _, r := range []statustable.NodeRow{statustable.MCNRow(m, n, true, now), statustable.UnlistedRow(n, "worker", true, now)} {
		if got := fmt.Sprint(r.Cells[len(r.Cells)-2:]); got != "["+desired+" "+current+"]" {
			t.Errorf("row %s ends %s", r.Name, got)
		}
	}
	if r := statustable.MCNRow(m, nil, true, now); r.Cells[len(r.Cells)-1] != "" {
		t.Errorf("without a node: %q", r.Cells)
	}
}
