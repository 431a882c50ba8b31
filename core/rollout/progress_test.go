package rollout_test

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
)

func TestNodePhase(t *testing.T) {
	const target = "rendered-worker-b"
	mcn := func(desired string, conds ...metav1.Condition) *mcfgv1.MachineConfigNode {
		m := &mcfgv1.MachineConfigNode{}
		m.Spec.ConfigVersion.Desired = desired
		m.Status.Conditions = conds
		return m
	}
	cond := func(t mcfgv1.StateProgress, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s}
	}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"degraded", rollout.NodePhase(node("n", degraded("rendered-worker-a", target, "chronyd failed")), nil, target), "Degraded (chronyd failed)"},
		{"not targeted", rollout.NodePhase(node("n", at("rendered-worker-a")), nil, target), "Waiting"},
		{"at the target", rollout.NodePhase(node("n", at(target)), nil, target), "Updated"},
		{"working, no MachineConfigNode", rollout.NodePhase(node("n", updating("rendered-worker-a", target)), nil, target), "Working"},
		{"the last phase done", rollout.NodePhase(node("n", updating("rendered-worker-a", target)),
			mcn(target, cond(phase.UpdatePrepared, metav1.ConditionTrue), cond(phase.Cordoned, metav1.ConditionTrue), cond(phase.Drained, metav1.ConditionFalse)), target), "Cordoned"},
		{"a phase in progress", rollout.NodePhase(node("n", updating("rendered-worker-a", target)),
			mcn(target, cond(phase.UpdatePrepared, metav1.ConditionTrue), cond(phase.Drained, metav1.ConditionUnknown)), target), "Drained (in progress)"},
		{"a MachineConfigNode of another config", rollout.NodePhase(node("n", updating("rendered-worker-a", target)),
			mcn("rendered-worker-a", cond(phase.Drained, metav1.ConditionTrue)), target), "Working"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	for _, tc := range []struct {
		done, total int
		want        string
	}{
		{0, 0, "[--------------------] 0/0 nodes updated to X"},
		{3, 10, "[######--------------] 3/10 nodes updated to X"},
		{10, 10, "[####################] 10/10 nodes updated to X"},
	} {
		if got := rollout.ProgressBar(tc.done, tc.total, "X"); got != tc.want {
			t.Errorf("ProgressBar(%d, %d): %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
}

func TestForecastCounts(t *testing.T) {
	f := rollout.Forecast{
		AtTarget: []string{"a"},
		Waves:    []rollout.Wave{{Nodes: make([]rollout.NodeChange, 2)}, {Nodes: make([]rollout.NodeChange, 1)}},
		Blocked:  []rollout.Skip{{Node: "z"}},
	}
	if got := f.ToUpdate(); got != 3 {
		t.Errorf("ToUpdate: %d, want 3", got)
	}
	if got := f.Updating(7); got != 2 {
		t.Errorf("Updating(7): %d, want 2", got)
	}
}
