package nodeanno

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(unschedulable bool, annotations map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Annotations: annotations},
		Spec:       corev1.NodeSpec{Unschedulable: unschedulable},
	}
}

func TestReaders(t *testing.T) {
	n := node(false, map[string]string{
		CurrentConfigKey: "rendered-worker-a",
		DesiredConfigKey: "rendered-worker-b",
		StateKey:         StateWorking,
		ReasonKey:        "",
		CordonedByKey:    CordonedByAgent,
	})
	for name, got := range map[string]string{
		"Current": Current(n), "Desired": Desired(n), "State": State(n), "Reason": Reason(n), "CordonedBy": CordonedBy(n),
	} {
		want := map[string]string{"Current": "rendered-worker-a", "Desired": "rendered-worker-b", "State": "Working", "Reason": "", "CordonedBy": "mcotui-agent"}[name]
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if Current(nil) != "" || State(node(false, nil)) != "" {
		t.Error("a nil node or one without annotations must read as empty")
	}
}

func TestAdminCordoned(t *testing.T) {
	for _, c := range []struct {
		name string
		n    *corev1.Node
		want bool
	}{
		{"nil", nil, false},
		{"schedulable", node(false, nil), false},
		{"schedulable with a stale marker", node(false, map[string]string{CordonedByKey: CordonedByAgent}), false},
		{"cordoned by the agent", node(true, map[string]string{CordonedByKey: CordonedByAgent}), false},
		{"cordoned by someone else", node(true, nil), true},
		{"cordoned, other annotations only", node(true, map[string]string{StateKey: StateDone}), true},
	} {
		if got := AdminCordoned(c.n); got != c.want {
			t.Errorf("%s: AdminCordoned = %t, want %t", c.name, got, c.want)
		}
	}
}
