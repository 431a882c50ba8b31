package demo

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/rollout"
)

// appsNamespace holds the workloads that drains evict.
const appsNamespace = "shop"

// app is a workload spread over the workers; a budget, when set, guards it as a
// PodDisruptionBudget would, so drains wait for replacements to run.
type app struct {
	name     string
	replicas func(workers int) int
	budget   *policyv1.PodDisruptionBudgetSpec
}

var apps = []app{
	{name: "storefront", replicas: func(w int) int { return w },
		budget: &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
	{name: "checkout", replicas: func(w int) int { return max(2, w/2) },
		budget: &policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}},
	{name: "recommender", replicas: func(w int) int { return max(1, w/3) }},
}

// kubelet plays the parts of a cluster that are not mcotui's: each node's kubelet
// (node status, pods starting and terminating), the workloads' controllers (an evicted
// pod is replaced on another node) and the disruption controller (budget status).
type kubelet struct {
	d *Demo

	mu          sync.Mutex
	terminating map[types.UID]bool
}

func newKubelet(d *Demo) *kubelet { return &kubelet{d: d, terminating: map[types.UID]bool{}} }

// registerNode creates the Node, Ready, as a kubelet registering would.
func (k *kubelet) registerNode(ctx context.Context, name string, nodeLabels, annotations map[string]string) error {
	l := map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
	}
	maps.Copy(l, nodeLabels)
	nodes := k.d.clients.Kube.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///" + l[corev1.LabelTopologyZone] + "/i-0" + name},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("250"),
	}
	node.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{readyCondition(true)},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: "v1.31.6", ContainerRuntimeVersion: "cri-o://1.31.5",
			OSImage: "Red Hat Enterprise Linux CoreOS 418.94.202502100215-0", OperatingSystem: "linux", Architecture: "amd64",
			KernelVersion: "5.14.0-427.55.1.el9_4.x86_64",
		},
	}
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s: status: %w", name, err)
	}
	return nil
}

func readyCondition(ready bool) corev1.NodeCondition {
	now := metav1.Now()
	c := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if !ready {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, "KubeletNotReady", "node is rebooting"
	}
	return c
}

// setReady writes the node's Ready condition: False while it reboots, True once its
// kubelet is back.
func (k *kubelet) setReady(ctx context.Context, name string, ready bool) error {
	nodes := k.d.clients.Kube.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := readyCondition(ready)
		found := false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				node.Status.Conditions[i] = c
				found = true
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, c)
		}
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: set Ready %t: %w", name, ready, err)
	}
	return nil
}

// seedWorkloads spreads the apps over the workers and creates their budgets.
func (k *kubelet) seedWorkloads(ctx context.Context) error {
	c := k.d.clients.Kube
	for i, a := range apps {
		for r := range a.replicas(len(k.d.workers)) {
			node := k.d.workers[(i+r)%len(k.d.workers)].name
			if err := k.runPod(ctx, a.name, node, false); err != nil {
				return err
			}
		}
		if a.budget == nil {
			continue
		}
		spec := *a.budget
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name}}
		if _, err := c.PolicyV1().PodDisruptionBudgets(appsNamespace).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: appsNamespace}, Spec: spec,
		}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodDisruptionBudget %s/%s: %w", appsNamespace, a.name, err)
		}
	}
	return nil
}

// runPod creates a pod of app on node and, after its start-up time when wait is set,
// marks it Running and Ready.
func (k *kubelet) runPod(ctx context.Context, app, node string, wait bool) error {
	pods := k.d.clients.Kube.CoreV1().Pods(appsNamespace)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: app + "-", Namespace: appsNamespace, Labels: map[string]string{"app": app},
			// Owned as a Deployment's pods are, by their ReplicaSet (which the demo does
			// not create: it plays the controllers itself), so that a drain and the drain
			// forecast see them as managed: replaced elsewhere, not lost.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-6c9f7d8b5",
				UID: types.UID("demo-replicaset-" + app), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To(int64(30)),
			Containers:                    []corev1.Container{{Name: app, Image: "quay.io/shop/" + app + ":1.4.2"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create a pod of %s on node %s: %w", app, node, err)
	}
	if wait {
		if err := k.d.sleep(ctx, k.d.draw(time.Second, 3*time.Second)); err != nil {
			return err
		}
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &now, PodIP: fmt.Sprintf("10.128.%d.%d", k.d.intn(250), 2+k.d.intn(250)),
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: app, Image: pod.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s/%s: status: %w", appsNamespace, pod.Name, err)
	}
	return nil
}

// run finishes the deletion of evicted pods after their termination, replaces them on
// another schedulable worker, and keeps the budgets' status, until ctx ends.
func (k *kubelet) run(ctx context.Context) error {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(k.d.clients.Kube, 0, kubeinformers.WithNamespace(appsNamespace))
	defer f.Shutdown()
	pods, pdbs, nodes := f.Core().V1().Pods(), f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Nodes()
	budgets := make(chan struct{}, 1)
	kick := func() {
		select {
		case budgets <- struct{}{}:
		default:
		}
	}
	onPod := func(obj any) {
		kick()
		if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
			k.terminate(ctx, p)
		}
	}
	onDelete := func(obj any) {
		kick()
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok && ctx.Err() == nil {
			k.replace(ctx, p, nodes.Lister().List)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, cur any) { onPod(cur) }, DeleteFunc: onDelete,
	}); err != nil {
		return err
	}
	if _, err := pdbs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { kick() }, UpdateFunc: func(_, _ any) { kick() },
	}); err != nil {
		return err
	}
	_ = nodes.Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, pdbs.Informer().HasSynced, nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-budgets:
		}
		list, err := pdbs.Lister().PodDisruptionBudgets(appsNamespace).List(labels.Everything())
		if err != nil {
			return err
		}
		for _, pdb := range list {
			if err := k.budgetStatus(ctx, pdb, pods.Lister().Pods(appsNamespace).List); err != nil && ctx.Err() == nil {
				k.d.log.Warn("budget status", "pdb", pdb.Name, "err", err)
				kick()
			}
		}
	}
}

// terminate deletes p for good after its containers had time to stop, once per pod.
// (An API server without graceful deletion has deleted it already.)
func (k *kubelet) terminate(ctx context.Context, p *corev1.Pod) {
	k.mu.Lock()
	if k.terminating[p.UID] {
		k.mu.Unlock()
		return
	}
	k.terminating[p.UID] = true
	k.mu.Unlock()
	k.d.wg.Go(func() {
		if err := k.d.sleep(ctx, k.d.draw(500*time.Millisecond, 2*time.Second)); err != nil {
			return
		}
		err := k.d.clients.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			k.d.log.Warn("finish pod deletion", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	})
}

// replace starts a pod of p's app on a schedulable, Ready worker, as its ReplicaSet and
// the scheduler would once p is gone.
func (k *kubelet) replace(ctx context.Context, p *corev1.Pod, listNodes func(labels.Selector) ([]*corev1.Node, error)) {
	app := p.Labels["app"]
	if app == "" {
		return
	}
	k.d.wg.Go(func() {
		all, _ := listNodes(labels.SelectorFromSet(labels.Set{roleLabel("worker"): ""}))
		var ready []string
		for _, n := range all {
			if rollout.Ready(n) { // Ready and schedulable
				ready = append(ready, n.Name)
			}
		}
		if len(ready) == 0 {
			return
		}
		if err := k.runPod(ctx, app, ready[k.d.intn(len(ready))], true); err != nil && ctx.Err() == nil {
			k.d.log.Warn("replace pod", "app", app, "err", err)
		}
	})
}

// budgetStatus writes pdb's status as the disruption controller would: pods already
// evicted (in disruptedPods, or terminating) do not count as healthy.
func (k *kubelet) budgetStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, list func(labels.Selector) ([]*corev1.Pod, error)) error {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return err
	}
	pods, err := list(sel)
	if err != nil {
		return err
	}
	disrupted := map[string]metav1.Time{}
	expected, healthy := 0, 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		expected++
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok && time.Since(t.Time) < 2*time.Minute {
			disrupted[p.Name] = t
			continue
		}
		if podutils.IsPodReady(p) {
			healthy++
		}
	}
	desired := 0
	switch {
	case pdb.Spec.MinAvailable != nil:
		desired, _ = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
	case pdb.Spec.MaxUnavailable != nil:
		unavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
		desired = max(0, expected-unavailable)
	}
	status := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptedPods: disrupted,
		DisruptionsAllowed: int32(max(0, healthy-desired)),
		CurrentHealthy:     int32(healthy), DesiredHealthy: int32(desired), ExpectedPods: int32(expected),
		Conditions: pdb.Status.Conditions,
	}
	if len(status.DisruptedPods) == 0 {
		status.DisruptedPods = nil
	}
	old := pdb.Status
	if len(old.DisruptedPods) == 0 {
		old.DisruptedPods = nil
	}
	if old.ObservedGeneration == status.ObservedGeneration && old.DisruptionsAllowed == status.DisruptionsAllowed &&
		old.CurrentHealthy == status.CurrentHealthy && old.DesiredHealthy == status.DesiredHealthy &&
		old.ExpectedPods == status.ExpectedPods && maps.Equal(old.DisruptedPods, status.DisruptedPods) {
		return nil
	}
	cp := pdb.DeepCopy()
	cp.Status = status
	_, err = k.d.clients.Kube.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // a newer version is on its way to the informer, and kicks again
	}
	return err
}
