package vm

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// nodeHistory watches a Node and keeps each change of its Ready condition's status and
// of the boot id its kubelet reports, in order, and when the Node was last uncordoned.
type nodeHistory struct {
	mu     sync.Mutex
	states []nodeState
}

type nodeState struct {
	ready  corev1.ConditionStatus
	msg    string
	bootID string
	at     time.Time
}

func (s nodeState) String() string {
	return fmt.Sprintf("%s Ready=%s boot=%.8s (%s)", s.at.Format("15:04:05"), s.ready, s.bootID, s.msg)
}

func watchNode(t *testing.T, name string) *nodeHistory {
	h := &nodeHistory{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	go func() {
		for ctx.Err() == nil {
			w, err := env.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				node, ok := ev.Object.(*corev1.Node)
				if !ok {
					continue
				}
				ready, msg := nodeReady(node)
				s := nodeState{ready: ready, msg: msg, bootID: node.Status.NodeInfo.BootID, at: time.Now()}
				h.mu.Lock()
				if l := len(h.states); l == 0 || h.states[l-1].ready != s.ready || h.states[l-1].bootID != s.bootID {
					h.states = append(h.states, s)
				}
				h.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return h
}

func (h *nodeHistory) snapshot() []nodeState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.states)
}

// leaseGaps watches the node's Lease in kube-node-lease and keeps the longest time
// between two renewals the kubelet made.
type leaseGaps struct {
	mu      sync.Mutex
	last    time.Time
	longest time.Duration
	renews  int
}

func watchLease(t *testing.T, name string) *leaseGaps {
	g := &leaseGaps{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	go func() {
		for ctx.Err() == nil {
			w, err := env.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Watch(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				l, ok := ev.Object.(*coordinationv1.Lease)
				if !ok || l.Spec.RenewTime == nil {
					continue
				}
				r := l.Spec.RenewTime.Time
				g.mu.Lock()
				if r.After(g.last) {
					if !g.last.IsZero() && r.Sub(g.last) > g.longest {
						g.longest = r.Sub(g.last)
					}
					g.last = r
					g.renews++
				}
				g.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return g
}

func (g *leaseGaps) get() (longest time.Duration, renews int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.longest, g.renews
}

// webSet plays, for the web pods, the ReplicaSet controller and the disruption
// controller, which do not run here: when a web pod on the real node is being deleted
// (an eviction), it makes a replacement on a kwok node, as the ReplicaSet would on
// another node; and it keeps the budget's status as the disruption controller would
// (disruptionsAllowed = healthy - minAvailable, where a pod the eviction API has marked
// disrupted is not healthy). It records the fewest healthy web pods it saw.
type webSet struct {
	ns, kwokNode string
	pdb          string
	min          int32
	replicas     int32
	rs           *appsv1.ReplicaSet
	// evictable are the web pods on the real node.
	evictable []string

	mu          sync.Mutex
	fewest      int32
	replaced    map[string]bool
	replacement int
}

func (w *webSet) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		if err := w.sync(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
			t.Logf("web set: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *webSet) sync(ctx context.Context) error {
	pods, err := env.Kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return err
	}
	pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(w.ns).Get(ctx, w.pdb, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var healthy int32
	present := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		present[p.Name] = true
		if p.DeletionTimestamp != nil {
			w.mu.Lock()
			done := w.replaced[p.Name]
			if !done {
				w.replaced[p.Name] = true
				w.replacement++
			}
			r := w.replacement
			w.mu.Unlock()
			if !done {
				if err := w.replace(ctx, r); err != nil {
					return err
				}
			}
			continue
		}
		if _, disrupted := pdb.Status.DisruptedPods[p.Name]; disrupted {
			continue
		}
		if p.Status.Phase == corev1.PodRunning && podReady(p) {
			healthy++
		}
	}
	// A pod gone between two looks was never seen terminating.
	for _, name := range w.evictable {
		w.mu.Lock()
		done := w.replaced[name]
		if !done && !present[name] {
			w.replaced[name] = true
			w.replacement++
		}
		r := w.replacement
		w.mu.Unlock()
		if !done && !present[name] {
			if err := w.replace(ctx, r); err != nil {
				return err
			}
		}
	}
	w.mu.Lock()
	if healthy < w.fewest {
		w.fewest = healthy
	}
	w.mu.Unlock()
	st := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: max(0, healthy-w.min),
		CurrentHealthy:     healthy,
		DesiredHealthy:     w.min,
		ExpectedPods:       w.replicas,
	}
	for name, at := range pdb.Status.DisruptedPods {
		if present[name] {
			if st.DisruptedPods == nil {
				st.DisruptedPods = map[string]metav1.Time{}
			}
			st.DisruptedPods[name] = at
		}
	}
	if st.DisruptionsAllowed == pdb.Status.DisruptionsAllowed && st.CurrentHealthy == pdb.Status.CurrentHealthy && len(st.DisruptedPods) == len(pdb.Status.DisruptedPods) {
		return nil
	}
	pdb.Status = st
	_, err = env.Kube.PolicyV1().PodDisruptionBudgets(w.ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err
}

// replace makes the r-th replacement web pod, on the kwok node.
func (w *webSet) replace(ctx context.Context, r int) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("web-r%d", r), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rs.Name, UID: w.rs.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: w.kwokNode, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	_, err := env.Kube.CoreV1().Pods(w.ns).Create(ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (w *webSet) fewestHealthy() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fewest
}

// podGone watches the node's pods and records, for each pod deleted, the deletion
// timestamp its last state had and when it was gone from the API.
type podGone struct {
	mu   sync.Mutex
	gone map[string]goneAt
}

type goneAt struct {
	deadline metav1.Time // the pod's deletionTimestamp: when its grace period ends
	at       time.Time
}

func watchPodsGone(t *testing.T, ns string) *podGone {
	g := &podGone{gone: map[string]goneAt{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			w, err := env.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type != watch.Deleted {
					continue
				}
				g.mu.Lock()
				if p.DeletionTimestamp != nil {
					g.gone[p.Name] = goneAt{deadline: *p.DeletionTimestamp, at: time.Now()}
				} else {
					g.gone[p.Name] = goneAt{at: time.Now()}
				}
				g.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return g
}

func (g *podGone) get(name string) (goneAt, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.gone[name]
	return a, ok
}

// ctrMonitor is a loop in the guest that writes what the runtime runs (ctr tasks ls)
// every half second, with a timestamp, to a file on the root disk; read after the
// reboot it says, from the runtime's side, when each container stopped.
const (
	ctrMonitorLog = "/var/lib/mcotui-ctrmon.log"
	ctrMonitor    = `systemd-run --unit=mcotui-ctrmon --collect /bin/sh -c 'while :; do echo "=== $(date +%s.%N)"; ctr -n k8s.io tasks ls; sleep 0.5; done >>` + ctrMonitorLog + ` 2>&1'`
)

// runtimeSnapshot is one of the monitor's lists: when, and each task's status.
type runtimeSnapshot struct {
	at    float64
	tasks map[string]string
}

func parseCtrMonitor(log string) []runtimeSnapshot {
	var out []runtimeSnapshot
	for _, block := range strings.Split(log, "=== ")[1:] {
		head, rest, _ := strings.Cut(block, "\n")
		at, err := strconv.ParseFloat(strings.TrimSpace(head), 64)
		if err != nil || !strings.HasPrefix(rest, "TASK") {
			continue // cut short by the shutdown
		}
		out = append(out, runtimeSnapshot{at: at, tasks: parseTasks(rest)})
	}
	return out
}

// Issue 29, test 1: a Reboot-policy update of a real node. The node runs three web
// pods of a ReplicaSet under a budget that lets one go at a time, a pod writing to an
// emptyDir, a pod that ignores SIGTERM (grace period 5 s) and a DaemonSet's pod. The
// agent cordons; its drain evicts the pods for real: the kubelet stops their containers
// (seen in the runtime, while the DaemonSet's container still runs), waits out the
// stubborn pod's grace period, and removes the emptyDir; the budget holds (never fewer
// than two healthy web pods); the DaemonSet's pod stays. The agent applies, reboots
// through logind; the kubelet reports the node NotReady as it shuts down and Ready on
// the new boot; the DaemonSet's pod runs again; the agent uncordons and reports Done;
// every MachineConfigNode phase is seen in order.
func TestVMRealNodeRebootUpdate(t *testing.T) {
	testBegan := time.Now()
	n := newKubeNode(t, "vm-node-"+strings.ToLower(rand.Text()[:5]), workerPool, cfgBase)
	m := n.m
	ctx := t.Context()

	// The kubelet's identity: system:node:<name>, held by NodeRestriction to its node.
	kcfg, err := clientcmd.RESTConfigFromKubeConfig(n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asNode, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	kwokNode := kwokNodeFor(t, n)
	_, err = asNode.CoreV1().Nodes().Patch(ctx, kwokNode, types.MergePatchType, []byte(`{"metadata":{"labels":{"stolen":"yes"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the kubelet's credentials patched another node (err %v): want Forbidden under the Node authorizer and NodeRestriction", err)
	}
	checkLeastPrivilege(t, n, kwokNode)
	node := n.get()
	if node.Status.NodeInfo.KubeletVersion != KubeletVersion || !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("node %s reports kubelet %q, runtime %q", n.name, node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	boot1 := m.Boots()[0]
	if node.Status.NodeInfo.BootID != boot1 {
		t.Errorf("the kubelet reports boot id %q; the guest announced %q", node.Status.NodeInfo.BootID, boot1)
	}

	// The workload.
	rs, pods := webPods(t, n)
	ds, err := env.Kube.AppsV1().DaemonSets(n.ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "node-daemon"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-daemon"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node-daemon"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: n.image}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scratch := n.pod("scratch", "write", "/data/marker")
	scratch.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	scratch.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	stubborn := n.pod("stubborn", "ignore-term")
	stubborn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	daemon := n.pod("node-daemon-x")
	daemon.Labels = map[string]string{"app": "node-daemon"}
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
	pods = append(pods, scratch, stubborn, daemon)
	podsBegan := time.Now()
	running := n.runPods(pods...)
	t.Logf("vm %s: %d pods created to running %s (first pull of %s)", n.name, len(pods), time.Since(podsBegan).Round(time.Second), n.image)
	byName := map[string]*corev1.Pod{}
	for _, p := range running {
		byName[p.Name] = p
	}
	tasks := n.runtimeTasks()
	for _, p := range running {
		if id := containerID(p); tasks[id] != "RUNNING" {
			t.Fatalf("pod %s's container %s is %q in the guest's containerd; tasks: %v", p.Name, id, tasks[id], tasks)
		}
	}
	scratchDir := "/var/lib/kubelet/pods/" + string(byName["scratch"].UID) + "/volumes/kubernetes.io~empty-dir/data"
	if got := m.Run(t, "cat "+scratchDir+"/marker"); got != "written by vmpod\n" {
		t.Fatalf("the emptyDir's file in the guest: %q", got)
	}

	web := startWebBudget(t, n, kwokNode, rs)

	history := watchNode(t, n.name)
	lease := watchLease(t, n.name)
	gone := watchPodsGone(t, n.ns)
	m.Run(t, ctrMonitor)
	awaitAgentActive(t, m)

	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	bootCtx, cancelBoot := m.Context()
	boot2, err := m.WaitBoot(bootCtx, boot1)
	cancelBoot()
	if err != nil {
		t.Fatal(err)
	}
	rebootedAt := time.Now()
	n.awaitState(cfgReboot, nodeanno.StateDone)
	doneAt := time.Now()
	n.awaitReady(true)
	t.Logf("vm %s: desiredConfig to the next boot %s, to Done %s, to Ready %s", n.name,
		rebootedAt.Sub(began).Round(time.Second), doneAt.Sub(began).Round(time.Second), time.Since(began).Round(time.Second))

	// The drain, from the runtime's side: each evicted pod's container stopped while the
	// DaemonSet's still ran (so the eviction stopped it, not the shutdown).
	snaps := parseCtrMonitor(m.Run(t, "cat "+ctrMonitorLog))
	daemonID := containerID(byName["node-daemon-x"])
	for _, name := range []string{"web-0", "web-1", "web-2", "scratch", "stubborn"} {
		id := containerID(byName[name])
		ran, stopped := false, -1
		for i, s := range snaps {
			if s.tasks[id] == "RUNNING" {
				ran = true
			} else if ran {
				stopped = i
				break
			}
		}
		switch {
		case !ran:
			t.Errorf("pod %s: the runtime monitor never saw its container %s running (%d snapshots)", name, id, len(snaps))
		case stopped < 0:
			t.Errorf("pod %s: the runtime monitor never saw its container %s stop before the reboot", name, id)
		case snaps[stopped].tasks[daemonID] != "RUNNING":
			t.Errorf("pod %s: its container %s stopped only when the DaemonSet's did (%q): by the shutdown, not the eviction", name, id, snaps[stopped].tasks[daemonID])
		}
		if g, ok := gone.get(name); !ok {
			t.Errorf("pod %s was never deleted", name)
		} else if name == "stubborn" && g.at.Before(g.deadline.Add(-time.Second)) {
			t.Errorf("pod stubborn, which ignores SIGTERM, was gone at %s, before its 5 s grace period ended at %s", g.at.Format(time.RFC3339Nano), g.deadline)
		}
	}
	if got := m.Run(t, "test -e "+scratchDir+" && echo present || echo removed"); got != "removed\n" {
		t.Errorf("the evicted pod's emptyDir %s is %s", scratchDir, got)
	}
	if f := web.fewestHealthy(); f < 2 {
		t.Errorf("the budget did not hold: %d healthy web pods at one point, minAvailable 2", f)
	}
	if left := kubeletPods(t, n.name); !slices.Equal(left, []string{n.ns + "/node-daemon-x"}) {
		t.Errorf("pods on the node after the update: %v, want only the DaemonSet's", left)
	}
	// The drain left the DaemonSet's pod; the kubelet's graceful shutdown ended it (a
	// kwok node never does). The previous boot's journal says so: the agent's reboot went
	// through logind, which waited on the kubelet's inhibitor lock while it killed the pod.
	// From the cluster's side two endings are correct, and which one happens is the
	// kubelet's race, not the agent's: the kubelet's last status update (Succeeded,
	// TerminationByKubelet) may not reach the API server before the node goes down
	// (kubernetes/kubernetes#112443, #109531), and then the kubelet starts the same pod
	// again on the new boot. Otherwise the pod ended and this test plays the DaemonSet
	// controller: the replacement runs on the new boot. Either way the node's daemon runs.
	shutdownLog := m.Run(t, "journalctl -b -1 -u "+kubeletUnit+" --no-pager -o cat | grep -F 'Shutdown manager finished killing pod' || true")
	if !strings.Contains(shutdownLog, n.ns+"/node-daemon-x") {
		t.Errorf("the previous boot's kubelet journal has no \"Shutdown manager finished killing pod\" for %s/node-daemon-x: the reboot did not wait for the kubelet's graceful shutdown; it logged:\n%s", n.ns, shutdownLog)
	}
	var dp *corev1.Pod
	restarted := false
	n.m.Await(t, "the DaemonSet's pod ended by the kubelet's shutdown, or run again on the new boot", func() (bool, string) {
		dp, err = env.Kube.CoreV1().Pods(n.ns).Get(ctx, "node-daemon-x", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := podCondition(dp, corev1.DisruptionTarget)
		if id := containerID(dp); dp.Status.Phase == corev1.PodRunning && podReady(dp) && id != "" && id != daemonID {
			restarted = true
			return true, ""
		}
		return dp.Status.Phase == corev1.PodSucceeded && c != nil && c.Reason == "TerminationByKubelet",
			fmt.Sprintf("phase %s, DisruptionTarget %+v %s", dp.Status.Phase, c, containerStates(dp))
	})
	if restarted {
		t.Logf("vm %s: the kubelet's final status for node-daemon-x did not reach the API server before the reboot; the kubelet ran the pod again on the new boot (container %s)", n.name, containerID(dp))
	} else {
		if err := env.Kube.CoreV1().Pods(n.ns).Delete(ctx, dp.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		again := n.pod("node-daemon-y")
		again.Labels, again.OwnerReferences = daemon.Labels, daemon.OwnerReferences
		n.runPods(again)
	}

	// The cluster's view of the reboot: the kubelet said NotReady as it went down, and
	// Ready on the new boot.
	states := history.snapshot()
	var sawDown, sawUp bool
	for _, s := range states {
		switch {
		case s.bootID == boot1 && s.ready != corev1.ConditionTrue:
			sawDown = true
		case sawDown && s.bootID == boot2 && s.ready == corev1.ConditionTrue:
			sawUp = true
		}
	}
	longest, renews := lease.get()
	t.Logf("vm %s: the Node's Ready and boot id: %v; the Lease: %d renewals, longest gap %s", n.name, states, renews, longest.Round(time.Second))
	if !sawDown || !sawUp {
		t.Errorf("node %s: want Ready on boot %s, then not Ready on it (the kubelet's shutdown), then Ready on boot %s; saw %v", n.name, boot1, boot2, states)
	}

	if boots := m.Boots(); len(boots) != 2 {
		t.Errorf("boots %v: want exactly one reboot", boots)
	}
	checkFiles(t, m, rebootFiles)
	if node := n.get(); node.Spec.Unschedulable || !n.mcn.everCordoned() {
		t.Errorf("unschedulable now %t, ever %t: want cordoned during the update and uncordoned after", node.Spec.Unschedulable, n.mcn.everCordoned())
	}
	// Updated=True was seen first before the update (the recorder starts with the node);
	// the end state is checked below.
	last := 0
	for _, p := range rebootPhases[:len(rebootPhases)-1] {
		at := n.mcn.seen(p.typ, p.status)
		if at == 0 {
			t.Errorf("MachineConfigNode %s never had %s=%s; seen:%s", n.name, p.typ, p.status, n.mcn)
			continue
		}
		if at < last {
			t.Errorf("MachineConfigNode %s: %s=%s came out of order; seen:%s", n.name, p.typ, p.status, n.mcn)
		}
		last = at
	}
	if c := n.condition(phase.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %+v", c)
	}
	if us := guestJournal(t, m); len(us) != 1 || us[0].Result != store.ResultDone {
		t.Errorf("the agent's journal: %+v, want one Done update", us)
	}
	t.Logf("vm %s: whole test %s", n.name, time.Since(testBegan).Round(time.Second))
}

// webPods creates the ReplicaSet "web" (3 replicas of vmpod; no controller acts on it
// here) and returns it with its three pods for the node, to be run.
func webPods(t *testing.T, n *kubeNode) (*appsv1.ReplicaSet, []*corev1.Pod) {
	t.Helper()
	rs, err := env.Kube.AppsV1().ReplicaSets(n.ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: n.image}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 3 {
		p := n.pod(fmt.Sprintf("web-%d", i))
		p.Labels = map[string]string{"app": "web"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
		pods = append(pods, p)
	}
	return rs, pods
}

// startWebBudget creates the budget "web" (minAvailable 2 of the 3 web pods, running on
// n), starts a webSet keeping it, with replacements on kwokNode, until the test ends, and
// waits until it allows one disruption.
func startWebBudget(t *testing.T, n *kubeNode, kwokNode string, rs *appsv1.ReplicaSet) *webSet {
	t.Helper()
	ctx := t.Context()
	pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(n.ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web := &webSet{ns: n.ns, kwokNode: kwokNode, pdb: pdb.Name, min: 2, replicas: 3, rs: rs, fewest: 3, evictable: []string{"web-0", "web-1", "web-2"}, replaced: map[string]bool{}}
	webCtx, stopWeb := context.WithCancel(context.Background())
	webDone := make(chan struct{})
	go func() { defer close(webDone); web.run(webCtx, t) }()
	t.Cleanup(func() { stopWeb(); <-webDone })
	n.m.Await(t, "the budget allowing one disruption", func() (bool, string) {
		p, err := env.Kube.PolicyV1().PodDisruptionBudgets(n.ns).Get(ctx, pdb.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.DisruptionsAllowed == 1, fmt.Sprintf("%+v", p.Status)
	})
	return web
}

// kwokNodeFor creates a kwok node beside real node n, for the replacements of its pods.
func kwokNodeFor(t *testing.T, n *kubeNode) string {
	t.Helper()
	name := "vm-node-kwok-" + n.name[len(n.name)-5:]
	if _, err := env.CreateNode(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// kubeletPods are the pods bound to node, "namespace/name", sorted, but for the
// agent's own (install's DaemonSet's, in installNamespace), which a drain leaves.
func kubeletPods(t *testing.T, node string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Namespace != installNamespace {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out
}
