package rollout_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/rollout"
)

func tainted(taints ...corev1.Taint) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

var (
	updateTaint = corev1.Taint{Key: rollout.UpdateInProgressTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}
	otherTaint  = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
)

func TestUpdateTaints(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pool    *poolT
		node    *nodeT
		want    []corev1.Taint
		changed bool
	}{
		{"behind the target: tainted", pool(), node("a", at(oldCfg), tainted(otherTaint)), []corev1.Taint{otherTaint, updateTaint}, true},
		{"unenrolled: tainted", pool(), node("a"), []corev1.Taint{updateTaint}, true},
		{"targeted, updating: untainted", pool(), node("a", updating(oldCfg, newCfg), tainted(updateTaint, otherTaint)), []corev1.Taint{otherTaint}, true},
		{"at the target already", pool(), node("a", at(newCfg)), nil, false},
		{"tainted already", pool(), node("a", at(oldCfg), tainted(updateTaint)), []corev1.Taint{updateTaint}, false},
		{"paused pool: left alone", pool(paused()), node("a", at(oldCfg)), nil, false},
		{"paused pool keeps a taint", pool(paused()), node("a", at(newCfg), tainted(updateTaint)), []corev1.Taint{updateTaint}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.node.Spec.Taints)
			got, changed := rollout.UpdateTaints(tc.pool, tc.node)
			if changed != tc.changed || len(got) != len(tc.want) {
				t.Fatalf("UpdateTaints = %v, %v; want %v, %v", got, changed, tc.want, tc.changed)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("taint %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
			if len(tc.node.Spec.Taints) != before {
				t.Error("UpdateTaints changed the node it was given")
			}
		})
	}
}

// TestTaintLeavesAvailabilityAlone: the taint is a scheduling preference, not a
// cordon: a tainted node that is Done still counts as available and is a candidate.
func TestTaintLeavesAvailabilityAlone(t *testing.T) {
	n := node("a", at(oldCfg), tainted(updateTaint))
	if rollout.Unavailable(n) || !rollout.Ready(n) {
		t.Fatal("a Done node with the UpdateInProgress taint counts as unavailable")
	}
	step, err := rollout.Plan(pool(), nodes(n), rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Targets) != 1 {
		t.Errorf("the tainted node was not targeted: %+v", step)
	}
}
