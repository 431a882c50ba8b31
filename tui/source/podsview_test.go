package source

import (
	"testing"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
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
// (:events). Each is what the API server holds, read when asked for.
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
	blocker := phase.Blocker{Pod: ns + "/storefront-0", Budgets: []string{ns + "/storefront"}}
	mcn.Status.Conditions, _ = phase.Apply(phase.Initial(metav1.Now()), p.New, metav1.Now(), phase.DrainFailed(phase.DescribeBlockers([]phase.Blocker{blocker})))
	if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	c := newCluster(t, env.Config, Options{Context: "test"})
	open := tuitest.Seq(tuitest.Typed(":node "+node), tuitest.Special(tea.KeyEnter))
	newRun := func(t *testing.T) *run {
		r := programWith(t, c, tui.Options{ReadOnly: true, Refresh: -1, Pods: c, Events: c})
		send(r, open)
		waitScreen(t, r, "storefront-0")
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
	t.Run("events", func(t *testing.T) {
		r := newRun(t)
		send(r, tuitest.Seq(tuitest.Typed(":events"), tuitest.Special(tea.KeyEnter)))
		waitScreen(t, r, "LAST SEEN")
		waitScreen(t, r, "EvictionRefused")
	})
}
