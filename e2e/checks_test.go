package e2e

import (
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// The checks TestRollout ends with must be able to fail: these feed them histories that
// break each rule.

func TestCheckDriversFindsWritesOutsideTheLease(t *testing.T) {
	controllers := map[string]bool{"a": true, "b": true}
	configs := map[string]bool{"new": true}
	w := func(node string, rv int64, writers ...string) write {
		return write{node: node, to: "new", rv: rv, writers: writers}
	}
	leases := []leaseVersion{{5, "a"}, {12, "a"}, {25, "b"}, {45, "a"}}
	for _, tc := range []struct {
		name   string
		writes []write
		want   string // in the problems; "" for none
	}{
		{"a hands over to b", []write{w("n1", 10, "a"), w("n2", 20, "a"), w("n3", 30, "b")}, ""},
		{"b writes while a holds the Lease", []write{w("n1", 10, "a"), w("n2", 20, "b")}, `written by b at resourceVersion 20 while the Lease was held by "a"`},
		{"a write before any Lease", []write{w("n1", 3, "a")}, "before anyone held the Lease"},
		{"spans interleave", []write{w("n1", 10, "a"), w("n2", 30, "b"), w("n3", 50, "a")}, "interleave"},
		{"a write by no controller", []write{w("n1", 10, "kubectl-edit")}, "not by exactly one controller"},
		{"a write owned twice", []write{w("n1", 10, "a", "b")}, "not by exactly one controller"},
		{"writes to other configs are not the rollout's", []write{{node: "n1", to: "old", rv: 3, writers: []string{"e2e.test"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := checkDrivers(tc.writes, leases, controllers, configs)
			got := strings.Join(problems, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("problems:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHistoryFindsMaxUnavailableExceeded(t *testing.T) {
	one := intstr.FromInt32(1)
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{MaxUnavailable: &one}}
	h := newHistory([]*mcfgv1.MachineConfigPool{pool}, map[string]string{"n1": "worker", "n2": "worker", "n3": "worker"})
	node := func(name, current, desired string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7", Annotations: map[string]string{
				nodeanno.CurrentConfigKey: current, nodeanno.DesiredConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone,
			}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		h.node(watch.Added, node(n, "old", "old"))
	}
	h.arm()
	h.node(watch.Modified, node("n1", "old", "new")) // one updating: within the limit
	if len(h.violations) != 0 {
		t.Fatalf("violations at one unavailable of one allowed: %v", h.violations)
	}
	h.node(watch.Modified, node("n2", "old", "new"))
	if len(h.violations) != 1 || !strings.Contains(h.violations[0], "pool worker had 2 nodes unavailable, over its maxUnavailable 1: n1, n2") {
		t.Fatalf("violations %v", h.violations)
	}
	// Three nodes joined at old, then two were given new.
	if last := h.writes[len(h.writes)-1]; h.peak["worker"] != 2 || len(h.writes) != 5 || last.node != "n2" || last.from != "old" || last.to != "new" || last.rv != 7 {
		t.Fatalf("peak %v, writes %+v", h.peak, h.writes)
	}
}

func TestTargetedWhilePausedFindsTargetsBetweenPauseAndResume(t *testing.T) {
	poolOf := map[string]string{"w1": "worker", "w2": "worker", "w3": "worker", "i1": "infra"}
	h := newHistory(nil, poolOf)
	pool := func(name string, paused bool, rv string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}, Spec: mcfgv1.MachineConfigPoolSpec{Paused: paused}}
	}
	h.pool(pool("worker", false, "1")) // the watch's list: where the changes start from
	h.pool(pool("worker", false, "5")) // a status write
	h.pool(pool("worker", true, "10"))
	h.pool(pool("worker", true, "15"))
	h.pool(pool("worker", false, "20"))
	w := func(node, to string, rv int64) write { return write{node: node, to: to, rv: rv} }
	for _, tc := range []struct {
		name   string
		writes []write
		want   []string // nodes reported
	}{
		{"targets before the pause and after the resume", []write{w("w1", "new", 8), w("w2", "new", 25)}, nil},
		{"a target while paused", []write{w("w1", "new", 8), w("w2", "new", 12)}, []string{"w2"}},
		{"other pools and other configs while paused", []write{w("i1", "new", 12), w("w3", "old", 12)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			during, from, to, problem := targetedWhilePaused(tc.writes, h.pauseChanges(), poolOf, "worker", "new")
			var got []string
			for _, d := range during {
				got = append(got, d.node)
			}
			if problem != "" || from != 10 || to != 20 || !slices.Equal(got, tc.want) {
				t.Fatalf("targetedWhilePaused = %v, %d..%d, %q; want %v, 10..20", got, from, to, problem, tc.want)
			}
		})
	}
	if _, _, _, problem := targetedWhilePaused(nil, h.pauseChanges(), poolOf, "infra", "new"); !strings.Contains(problem, "want one pause then one resume") {
		t.Errorf("a pool never paused: problem %q", problem)
	}
}
