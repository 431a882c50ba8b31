package apisim

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host/hosttest"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
)

// runPod creates a pod on node and marks it Running, as its kubelet would.
func runPod(t testing.TB, c *kube.Clients, p *corev1.Pod) {
	t.Helper()
	ctx := kubetest.Context(t)
	created, err := c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := c.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("run pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func pod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
}

func TestEviction(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	createNamespace(t, c, "ns")
	runPod(t, c, pod("ns", "guarded", "n", map[string]string{"app": "guarded"}))
	kubetest.CreateBudget(t, c.Kube, "ns", "guarded", 0)
	evict := func(name string) error {
		return c.Kube.PolicyV1().Evictions("ns").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
	}
	err := evict("guarded")
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Fatalf("evicting a pod whose budget allows no disruption: %v, want 429 TooManyRequests", err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil || len(st.Status().Details.Causes) != 1 ||
		st.Status().Details.Causes[0].Message != "The disruption budget guarded needs 1 healthy pods and has 1 currently" {
		t.Fatalf("the refusal's causes: %+v", st.Status().Details)
	}
	if err := evict("missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("evicting a missing pod: %v, want NotFound", err)
	}

	pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SetBudget(t, c.Kube, pdb, 1)
	if err := evict("guarded"); err != nil {
		t.Fatalf("evicting with a disruption allowed: %v", err)
	}
	if got := kubetest.PodsOn(t, c.Kube, "n"); len(got) != 0 {
		t.Fatalf("pods left after the eviction: %v", got)
	}
	pdb, err = c.Kube.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pdb.Status.DisruptedPods["guarded"]; pdb.Status.DisruptionsAllowed != 0 || !ok {
		t.Fatalf("the budget after the eviction: %+v, want the disruption used up", pdb.Status)
	}

	// A pod that is not running yet is evicted whatever its budgets say; a pod two
	// budgets select is refused.
	if _, err := c.Kube.CoreV1().Pods("ns").Create(ctx, pod("ns", "pending", "n", map[string]string{"app": "guarded"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict("pending"); err != nil {
		t.Fatalf("evicting a pending pod: %v", err)
	}
	runPod(t, c, pod("ns", "twice", "n", map[string]string{"app": "twice"}))
	kubetest.CreateBudget(t, c.Kube, "ns", "twice", 1)
	if _, err := c.Kube.PolicyV1().PodDisruptionBudgets("ns").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict("twice"); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
		t.Fatalf("evicting a pod two budgets select: %v, want an internal error saying so", err)
	}
}

// TestDrainHelper runs kubectl's drain helper as platform/kube/nodeagent's Drain configures it.
func TestDrainHelper(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	createNamespace(t, c, "ns")
	kubetest.CreateBareNode(t, c.Kube, "n", nil, nil)
	bareWithEmptyDir := pod("ns", "bare", "n", nil)
	bareWithEmptyDir.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	runPod(t, c, bareWithEmptyDir)
	runPod(t, c, pod("ns", "guarded", "n", map[string]string{"app": "guarded"}))
	kubetest.CreateBudget(t, c.Kube, "ns", "guarded", 0)
	ds, err := c.Kube.AppsV1().DaemonSets("ns").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dsPod := pod("ns", "agent-n", "n", map[string]string{"app": "agent"})
	dsPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: new(true)}}
	runPod(t, c, dsPod)
	runPod(t, c, pod("ns", "elsewhere", "m", nil))

	// The helper evicts pods in goroutines of their own, each writing its progress.
	var out hosttest.SyncBuffer
	h := &drain.Helper{Ctx: ctx, Client: c.Kube, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		GracePeriodSeconds: -1, Timeout: 2 * time.Second, EvictErrorRetryDelay: 100 * time.Millisecond, Out: &out, ErrOut: &out}
	if gv, err := drain.CheckEvictionSupport(c.Kube); err != nil || gv != policyv1.SchemeGroupVersion {
		t.Fatalf("the drain helper finds eviction at %v (%v), want policy/v1", gv, err)
	}
	if err := drain.RunNodeDrain(h, "n"); err == nil {
		t.Fatal("the drain finished while a budget allowing no disruption guards a pod")
	}
	if got, want := kubetest.PodsOn(t, c.Kube, "n"), []string{"ns/agent-n", "ns/guarded"}; !slices.Equal(got, want) {
		t.Fatalf("pods on the node after a blocked drain: %v, want %v\n%s", got, want, out.String())
	}

	pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SetBudget(t, c.Kube, pdb, 1)
	if err := drain.RunNodeDrain(h, "n"); err != nil {
		t.Fatalf("drain once the budget allows it: %v\n%s", err, out.String())
	}
	if got, want := kubetest.PodsOn(t, c.Kube, "n"), []string{"ns/agent-n"}; !slices.Equal(got, want) {
		t.Fatalf("pods on the node after the drain: %v, want only the DaemonSet's %v", got, want)
	}
	if got := kubetest.PodsOn(t, c.Kube, "m"); len(got) != 1 {
		t.Fatalf("the drain touched another node's pods: %v", got)
	}
}

// TestNodeAgent runs platform/kube/nodeagent's NodeAgent, the agent's access to the cluster, on
// apisim: what `mcotui demo` does for every simulated node.
func TestNodeAgent(t *testing.T) {
	ctx := kubetest.Context(t)
	srv, c := start(t, Options{})
	createNamespace(t, c, "ns")
	srvNode, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0",
		Labels:      map[string]string{"node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{nodeanno.CurrentConfigKey: "rendered-worker-a"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBareNode(t, c.Kube, "worker-1", nil, nil)

	a, err := nodeagent.NewNodeAgent(ctx, srv.Config(), "worker-0", "", nodeagent.NodeAgentOptions{DrainRetry: 100 * time.Millisecond, EvictTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	if err := a.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Unschedulable || nodeanno.CordonedBy(n) != nodeanno.CordonedByAgent {
		t.Fatalf("after Cordon: unschedulable %v, cordoned by %q", n.Spec.Unschedulable, nodeanno.CordonedBy(n))
	}
	if err := a.Annotate(ctx, map[string]string{nodeanno.DesiredConfigKey: "rendered-worker-b", nodeanno.CurrentConfigKey: "rendered-worker-a"}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, time.Minute, "the agent's cache to see its writes", func() (bool, string) {
		n, err := a.Node(ctx)
		if err != nil {
			return false, err.Error()
		}
		return n.Annotations[nodeanno.DesiredConfigKey] == "rendered-worker-b" && n.Spec.Unschedulable,
			fmt.Sprintf("desired %q, unschedulable %v", n.Annotations[nodeanno.DesiredConfigKey], n.Spec.Unschedulable)
	})
	select {
	case <-a.Changes():
	default:
		t.Fatal("no change was signalled for the agent's own writes")
	}

	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.CordonDone()); err != nil {
		t.Fatal(err)
	}
	mcn, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mcn.Spec.Pool.Name != "worker" || mcn.Spec.ConfigVersion.Desired != "rendered-worker-b" || mcn.OwnerReferences[0].UID != srvNode.UID {
		t.Fatalf("MachineConfigNode spec %+v, owners %+v", mcn.Spec, mcn.OwnerReferences)
	}
	if cond := findCondition(mcn, phase.Cordoned); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("Cordoned condition %+v", cond)
	}
	if v := mcn.Status.ConfigVersion; v == nil || v.Current != "rendered-worker-a" || v.Desired != "rendered-worker-b" {
		t.Fatalf("status.configVersion %+v", v)
	}
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.CordonDone()); err != nil {
		t.Fatal(err)
	}
	again, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != mcn.ResourceVersion {
		t.Fatalf("a repeated SetConditions wrote again: %s -> %s (%v)", mcn.ResourceVersion, again.ResourceVersion, err)
	}

	runPod(t, c, pod("ns", "free", "worker-0", map[string]string{"app": "free"}))
	runPod(t, c, pod("ns", "guarded", "worker-0", map[string]string{"app": "guarded"}))
	kubetest.CreateBudget(t, c.Kube, "ns", "guarded", 0)
	blocked := make(chan []phase.Blocker, 16)
	done := make(chan error, 1)
	go func() {
		done <- a.Drain(ctx, func(bs []phase.Blocker) { blocked <- bs }, nil, nil)
	}()
	want := []phase.Blocker{{Pod: "ns/guarded", Budgets: []string{"ns/guarded"}}}
	if got := <-blocked; !reflect.DeepEqual(got, want) {
		t.Fatalf("blocked by %+v, want %+v", got, want)
	}
	pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SetBudget(t, c.Kube, pdb, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := kubetest.PodsOn(t, c.Kube, "worker-0"); len(got) != 0 {
		t.Fatalf("pods left after the drain: %v", got)
	}
	if err := a.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	a.Event(corev1.EventTypeNormal, "Drained", "drained worker-0")
	kubetest.Eventually(t, time.Minute, "the agent's event", func() (bool, string) {
		evs, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "Drained" && e.InvolvedObject.Name == "worker-0"
		}), fmt.Sprintf("%d events in default", len(evs.Items))
	})
}

func findCondition(mcn *mcfgv1.MachineConfigNode, typ mcfgv1.StateProgress) *metav1.Condition {
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == string(typ) {
			return &mcn.Status.Conditions[i]
		}
	}
	return nil
}
