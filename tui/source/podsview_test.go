package source

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// TestTUIFromBlockedDrainToPod: on the real API server, a node whose drain a
// PodDisruptionBudget holds back leads, in k9s's keys, to that pod's YAML (o), its
// budget with what it allows now (B), the node's pods with the blocker marked
// (:pods), its log (l in the pod's view: pods/log, which the API server cannot proxy
// here without a kubelet, so the screen must say so, naming the pod), the agent's log
// (l on the node: no agent runs here, which it must say) and the cluster's Events
// (:events). Each is what the API server holds, read when asked for. Of two blockers,
// ] chooses the second, and o, B, v and ctrl+k act on it: the API server refuses its
// eviction while its budget allows none, deletes it when asked, and the first blocker
// is left as it was.
func TestTUIFromBlockedDrainToPod(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tpodv", 1, 1)
	node := p.AtNew[0]
	ns, err := env.CreateNamespace(ctx, "tpodv-")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "storefront-0", Labels: map[string]string{"app": "storefront"}},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/storefront:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBudget(t, env.Kube, ns, "storefront", 0)
	// The second blocker: Running and Ready, as a kubelet would say, since the API
	// server evicts a Pending pod whatever its budget says.
	cart, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cart-0", Labels: map[string]string{"app": "cart"}},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "cart", Image: "registry.example.com/cart:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cart.Status.Phase = corev1.PodRunning
	cart.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, cart, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBudget(t, env.Kube, ns, "cart", 0)
	if _, err := env.Kube.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "storefront-0.evict", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name},
		Reason:         "EvictionRefused", Message: "Cannot evict pod as it would violate the pod's disruption budget.",
		Type: corev1.EventTypeWarning, LastTimestamp: metav1.Now(),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The agent's report of the drain it retries, as it writes it.
	n, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := mcns.Create(ctx, kube.NewMachineConfigNode(n, p.Name, p.New), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blockers := []phase.Blocker{
		{Pod: ns + "/storefront-0", Budgets: []string{ns + "/storefront"}},
		{Pod: ns + "/cart-0", Budgets: []string{ns + "/cart"}},
	}
	mcn.Status.Conditions, _ = phase.Apply(phase.Initial(metav1.Now()), p.New, metav1.Now(), phase.DrainFailed(phase.DescribeBlockers(blockers)))
	if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	c := newCluster(t, env.Config, Options{Context: "test"})
	open := tuitest.Seq(tuitest.Typed(":node "+node), tuitest.Special(tea.KeyEnter))
	newRun := func(t *testing.T) *run {
		r := programWith(t, c, tui.Options{ReadOnly: true, Refresh: -1, Pods: c, Events: c})
		send(r, open)
		waitScreen(t, r, "▸ "+ns+"/storefront-0")
		return r
	}
	t.Run("pod YAML, then its log", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Typed("o"))
		waitScreen(t, r, "Pod "+ns+"/storefront-0 (YAML)")
		waitScreen(t, r, "image: registry.example.com/storefront:1")
		send(r, tuitest.Typed("l"))
		waitScreen(t, r, "read the log of pod "+ns+"/storefront-0")
	})
	t.Run("budget", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Typed("B"))
		waitScreen(t, r, "PodDisruptionBudgets of pod "+ns+"/storefront-0")
		waitScreen(t, r, "# 0 disruptions allowed now: PodDisruptionBudget "+ns+"/storefront, minAvailable 1;")
		waitScreen(t, r, "kind: PodDisruptionBudget")
	})
	t.Run("pods on the node", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Seq(tuitest.Typed(":pods"), tuitest.Special(tea.KeyEnter)))
		waitScreen(t, r, "Pods on node "+node)
		waitScreen(t, r, "storefront-0")
		waitScreen(t, r, "▸ "+ns)
	})
	t.Run("agent log", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Typed("l"))
		waitScreen(t, r, "machine-config-daemon pod runs on node "+node)
	})
	t.Run("the second blocker", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Typed("]"))
		waitScreen(t, r, "▸ "+ns+"/cart-0")
		send(r, tuitest.Typed("o"))
		waitScreen(t, r, "Pod "+ns+"/cart-0 (YAML)")
		waitScreen(t, r, "image: registry.example.com/cart:1")
		send(r, tuitest.Special(tea.KeyEscape))
		send(r, tuitest.Typed("B"))
		waitScreen(t, r, "PodDisruptionBudgets of pod "+ns+"/cart-0")
		waitScreen(t, r, "# 0 disruptions allowed now: PodDisruptionBudget "+ns+"/cart, minAvailable 1;")
	})
	t.Run("evict, then delete, the second blocker", func(t *testing.T) {
		r := programWith(t, c, tui.Options{Refresh: -1, NoticeTimeout: -1, Pods: c, Events: c, Actions: NewActions(c, "test")})
		send(r, open)
		waitScreen(t, r, "▸ "+ns+"/storefront-0")
		send(r, tuitest.Typed("]"))
		waitScreen(t, r, "▸ "+ns+"/cart-0")
		send(r, tuitest.Typed("v"))
		waitScreen(t, r, "Evict pod "+ns+"/cart-0")
		send(r, tuitest.Typed("y"))
		// The API server's refusal, naming the pod: its budget allows no disruption.
		waitScreen(t, r, "evict pod "+ns+"/cart-0")
		for _, name := range []string{"cart-0", "storefront-0"} {
			if got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
				t.Fatalf("after a refused eviction, pod %s: %v, deleted at %v", name, err, got.DeletionTimestamp)
			}
		}
		send(r, []tea.Msg{tea.KeyPressMsg{Code: 'k', Mod: tea.ModCtrl}})
		waitScreen(t, r, "Delete pod "+ns+"/cart-0")
		send(r, tuitest.Typed("y"))
		clustertest.Eventually(ctx, t, "pod "+ns+"/cart-0 deleted", func(ctx context.Context) (bool, error) {
			got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "cart-0", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && got.DeletionTimestamp != nil, err
		})
		if got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "storefront-0", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("the first blocker, never chosen: %v, deleted at %v", err, got.DeletionTimestamp)
		}
	})
	t.Run("events", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Seq(tuitest.Typed(":events"), tuitest.Special(tea.KeyEnter)))
		waitScreen(t, r, "LAST SEEN")
		waitScreen(t, r, "EvictionRefused")
	})
}
