package nodeanno

import (
	"testing"
	"time"

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
		// OpenShift: MCO's drain controller cordons with its drain handshake, not ours.
		{"cordoned by MCO for a drain", node(true, map[string]string{DesiredDrainKey: "drain-rendered-worker-b", LastAppliedDrainKey: "uncordon-rendered-worker-a"}), false},
		{"drained by MCO, uncordon not yet done", node(true, map[string]string{DesiredDrainKey: "uncordon-rendered-worker-b", LastAppliedDrainKey: "drain-rendered-worker-b"}), false},
		{"cordoned after MCO uncordoned it", node(true, map[string]string{DesiredDrainKey: "uncordon-rendered-worker-b", LastAppliedDrainKey: "uncordon-rendered-worker-b"}), true},
	} {
		if got := AdminCordoned(c.n); got != c.want {
			t.Errorf("%s: AdminCordoned = %t, want %t", c.name, got, c.want)
		}
	}
}

func TestRetry(t *testing.T) {
	next := time.Date(2026, 12, 1, 16, 40, 0, 0, time.FixedZone("CET", 3600))
	r := Retry{Attempt: 3, Next: next}
	if got, want := r.String(), "3 2026-12-01T15:40:00Z"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	got, ok := RetryOf(node(false, map[string]string{RetryKey: r.String()}))
	if !ok || got.Attempt != 3 || !got.Next.Equal(next) {
		t.Errorf("RetryOf(%q) = %+v, %t", r.String(), got, ok)
	}
	for _, bad := range []string{"", "3", "x 2026-12-01T15:40:00Z", "0 2026-12-01T15:40:00Z", "3 soon", "-1 2026-12-01T15:40:00Z"} {
		if r, ok := RetryOf(node(false, map[string]string{RetryKey: bad})); ok {
			t.Errorf("RetryOf(%q) = %+v, want none", bad, r)
		}
	}
	if _, ok := RetryOf(nil); ok {
		t.Error("a nil node has no retry")
	}
}
