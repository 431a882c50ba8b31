package drainforecast

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func pod(name, node, cpu string, owner string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x", Controller: &yes}}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func TestCheckFindsEachKind(t *testing.T) {
	in := Input{
		Draining: []string{"a", "b"},
		Members:  []*corev1.Node{node("a", "4"), node("b", "4"), node("c", "4")},
		Pods: []*corev1.Pod{
			pod("guarded", "a", "1", "ReplicaSet"),
			pod("bare", "a", "1", ""),
			pod("cache", "b", "1", "ReplicaSet", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}),
			pod("db", "b", "1", "StatefulSet", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db"}}}}
			}),
			pod("agent", "a", "1", "DaemonSet", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}),
			pod("ok", "c", "1", "ReplicaSet"),
		},
		Budgets: []*policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "guard"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
		}},
		Claims:         []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-local"}}},
		Volumes:        []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt"}}}}},
		MaxUnavailable: 1,
	}
	rep := Check(in)
	var got []string
	for _, r := range rep.Risks {
		got = append(got, r.Node+" "+r.Pod+" "+string(r.Kind))
	}
	want := []string{"a app/bare Unmanaged", "a app/guarded PDB", "b app/cache EmptyDir", "b app/db LocalVolume"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("risks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if b := rep.Blocking(); len(b) != 1 || b[0] != "a" {
		t.Fatalf("blocking %v", b)
	}
	// a's drain moves 2 CPUs (the DaemonSet pod stays), b's 2: a goes aside (by
	// name), and b and c have 4-2 and 4-1 free.
	c := rep.Capacity
	if c.Short || strings.Join(c.Cordoned, ",") != "a" || c.NeedCPU.String() != "2" || c.FreeCPU.String() != "5" {
		t.Fatalf("capacity %+v: %s", c, c)
	}
}

func TestCapacityShort(t *testing.T) {
	in := Input{
		Draining:       []string{"a", "b"},
		Members:        []*corev1.Node{node("a", "2"), node("b", "2")},
		Pods:           []*corev1.Pod{pod("x", "a", "1500m", "ReplicaSet"), pod("y", "b", "1500m", "ReplicaSet")},
		MaxUnavailable: 1,
	}
	c := Check(in).Capacity
	if !c.Short || !strings.Contains(c.String(), "does NOT fit") {
		t.Fatalf("capacity %s", c)
	}
	// A budget that allows a disruption does not block.
	in.Budgets = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "g"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1},
	}}
	if r := Check(in).Risks; len(r) != 0 {
		t.Fatalf("risks %v", r)
	}
}

// TestBudgetAtZeroWithPodsDown: a budget at 0 because some of its pods are down now
// (mid-rollout, evicted by the drains in flight) is said so, with its counts; one at 0
// with every pod healthy (it never allows a disruption) is said as before.
func TestBudgetAtZeroWithPodsDown(t *testing.T) {
	budget := func(healthy, expected int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "guard"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: healthy, DesiredHealthy: 3, ExpectedPods: expected},
		}
	}
	for _, tc := range []struct {
		healthy, expected int32
		want              string
	}{
		{2, 3, "pod app/guarded: PodDisruptionBudget app/guard allows 0 disruptions now, 2 of its 3 pods healthy: the drain blocks until more are back"},
		{3, 3, "pod app/guarded: PodDisruptionBudget app/guard allows 0 disruptions now: the drain blocks"},
		{0, 0, "pod app/guarded: PodDisruptionBudget app/guard allows 0 disruptions now: the drain blocks"},
	} {
		rep := Check(Input{
			Draining: []string{"a"}, Members: []*corev1.Node{node("a", "4"), node("b", "4")}, MaxUnavailable: 1,
			Pods:    []*corev1.Pod{pod("guarded", "a", "1", "ReplicaSet")},
			Budgets: []*policyv1.PodDisruptionBudget{budget(tc.healthy, tc.expected)},
		})
		if len(rep.Risks) != 1 || rep.Risks[0].String() != tc.want || !rep.Risks[0].Kind.Blocks() {
			t.Errorf("%d of %d healthy: %+v, want %q", tc.healthy, tc.expected, rep.Risks, tc.want)
		}
	}
}
