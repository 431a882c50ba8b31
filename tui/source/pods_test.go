package source

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestPodActions: the evict and delete the TUI offers on a pod that holds a drain back,
// against the real API server: an eviction its budget does not allow is refused with the
// API server's reason, and nothing changes; a delete goes past the budget; an eviction
// the budget allows evicts.
func TestPodActions(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "tpod-")
	if err != nil {
		t.Fatal(err)
	}
	pods := env.Kube.CoreV1().Pods(ns)
	for _, name := range []string{"web-0", "web-1"} {
		p, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Running and Ready, as a kubelet would say (none runs here): the API server
		// evicts a Pending pod whatever its budget says.
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pdb := kubetest.CreateBudget(t, env.Kube, ns, "web", 0)
	c := newCluster(t, env.Config, Options{Context: "test"})
	a := NewActions(c, "test")

	err = a.EvictPod(ctx, ns, "web-0")
	if err == nil || !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "pod "+ns+"/web-0") {
		t.Fatalf("evicting past a budget that allows none: %v, want the API server's refusal naming the pod", err)
	}
	if _, err := pods.Get(ctx, "web-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("the refused eviction removed the pod: %v", err)
	}
	if err := a.DeletePod(ctx, ns, "web-0"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	kubetest.SetBudget(t, env.Kube, pdb, 1)
	if err := a.EvictPod(ctx, ns, "web-1"); err != nil {
		t.Fatalf("evicting within the budget: %v", err)
	}
	for _, name := range []string{"web-0", "web-1"} {
		// Without a kubelet, a deleted pod goes at once (no grace to wait out).
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp == nil {
			t.Errorf("pod %s is still there, not being deleted", name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}
