package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/hookjob"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// hookCronJob creates a suspended CronJob whose Job is a hook; fail, when set, makes
// kwok fail its pod with that message (kubetest.KwokFailAnnotation).
func hookCronJob(t *testing.T, ns, name, fail string) {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "hook", Image: "registry.example/hook:1", Command: []string{"/bin/hook"}}},
	}}
	if fail != "" {
		tmpl.Annotations = map[string]string{kubetest.KwokFailAnnotation: fail}
	}
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.CronJobSpec{Schedule: "@yearly", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: tmpl},
		}},
	}
	if _, err := env.Kube.BatchV1().CronJobs(ns).Create(kubetest.Context(t), cj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CronJob %s/%s: %v", ns, name, err)
	}
}

// hookJob reads the Job of a hook's run, nil when there is none.
func hookJob(t *testing.T, r hookjob.Run) *batchv1.Job {
	t.Helper()
	j, err := env.Kube.BatchV1().Jobs(r.Ref.Namespace).Get(kubetest.Context(t), r.Name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func envOf(j *batchv1.Job) map[string]string {
	out := map[string]string{}
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

// TestHooksRunAroundTheRollout: a pool with all four hooks rolls out; the Jobs run
// from their CronJobs (kwok plays their pods), each once, with the pool, node and
// config in their environment; the first node is targeted only after the
// before-rollout hook succeeded, each node only after its before-drain hook
// succeeded, and the after-rollout hook runs once every node is Done.
func TestHooksRunAroundTheRollout(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "hooks-")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := env.CreateNode(ctx, "hk-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), runner.Name, metav1.DeleteOptions{})
	})
	env.PlayJobs(t, ns, runner.Name)
	refs := map[policy.Hook]policy.HookRef{}
	anns := map[string]any{}
	for _, h := range policy.AllHooks {
		hookCronJob(t, ns, "hk-"+string(h), "")
		refs[h] = policy.HookRef{Namespace: ns, Name: "hk-" + string(h)}
		anns[policy.HookKey(h)] = ns + "/hk-" + string(h)
	}
	pool := createPool(t, "hk", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "hk", anns)
	v1 := machineConfig(t, "00-hk", "hk", "/etc/hk", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "hk", "rendered-hk-old", "", "")
	startFakeAgent(t, "hk", 200*time.Millisecond)
	run := func(h policy.Hook, node string) hookjob.Run {
		return hookjob.Run{Pool: "hk", Node: node, Config: target, Hook: h, Ref: refs[h]}
	}

	// At the moment each node is first seen targeted, its hooks before must have
	// succeeded; they cannot un-succeed, so a look right after tells.
	var mu sync.Mutex
	var problems []string
	wctx, cancel := context.WithCancel(context.Background())
	w, err := env.Kube.CoreV1().Nodes().Watch(wctx, metav1.ListOptions{LabelSelector: roleLabel("hk")})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); w.Stop(); wg.Wait() })
	seen := map[string]bool{}
	wg.Go(func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || nodeanno.Desired(n) != target || seen[n.Name] {
				continue
			}
			seen[n.Name] = true
			for _, r := range []hookjob.Run{run(policy.BeforeRollout, ""), run(policy.BeforeDrain, n.Name)} {
				j, err := env.Kube.BatchV1().Jobs(ns).Get(wctx, r.Name(), metav1.GetOptions{})
				if err != nil || hookjob.StateOf(j) != hookjob.Succeeded {
					mu.Lock()
					problems = append(problems, "node "+n.Name+" targeted before its "+r.String()+" succeeded")
					mu.Unlock()
				}
			}
		}
	})

	applyMC(t, v1)
	startController(t, "lease-hk", "hk-ctrl")
	waitRolledOut(t, "hk", target, nodes, 30*time.Second)
	kubetest.Eventually(t, time.Minute, "the after-rollout hook succeeded and the pool's hooked-rollout mark is gone", func() (bool, string) {
		j := hookJob(t, run(policy.AfterRollout, ""))
		p := getPool(t, "hk")
		_, marked := p.Annotations[rollout.HookedRolloutKey]
		return j != nil && hookjob.StateOf(j) == hookjob.Succeeded && !marked, condString(p)
	})

	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
	for _, h := range policy.AllHooks {
		var forNodes []string
		if h == policy.BeforeDrain || h == policy.AfterNode {
			forNodes = nodes
		} else {
			forNodes = []string{""}
		}
		for _, node := range forNodes {
			r := run(h, node)
			j := hookJob(t, r)
			if j == nil {
				t.Errorf("%s: no Job %s", r, r.Name())
				continue
			}
			if hookjob.StateOf(j) != hookjob.Succeeded {
				t.Errorf("%s: Job %s did not succeed: %+v", r, j.Name, j.Status.Conditions)
			}
			want := map[string]string{hookjob.EnvPool: "hk", hookjob.EnvHook: string(h), hookjob.EnvNode: node, hookjob.EnvConfig: target}
			got := envOf(j)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: Job %s env %s = %q, want %q", r, j.Name, k, got[k], v)
				}
			}
		}
	}
	list, err := env.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 6 {
		var names []string
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
		t.Errorf("%d Jobs ran, want 6 (one per hook, one per node for the node hooks): %v", len(list.Items), names)
	}
}

// TestFailedHookStopsTheRollout: the after-node hook of the first node fails; the
// rollout stops there, the second node is never targeted, and the pool's RolloutHeld
// says HookFailed with the Job's name and its last lines.
func TestFailedHookStopsTheRollout(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "hooks-")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := env.CreateNode(ctx, "hkf-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), runner.Name, metav1.DeleteOptions{})
	})
	env.PlayJobs(t, ns, runner.Name)
	hookCronJob(t, ns, "smoke", "GET http://shop/healthz\ncurl: (7) Failed to connect to shop port 80: Connection refused")
	pool := createPool(t, "hkf", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "hkf", map[string]any{policy.HookKey(policy.AfterNode): ns + "/smoke"})
	v1 := machineConfig(t, "00-hkf", "hkf", "/etc/hkf", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "hkf", "rendered-hkf-old", "", "")
	startFakeAgent(t, "hkf", 200*time.Millisecond)
	applyMC(t, v1)
	startController(t, "lease-hkf", "hkf-ctrl")

	var first string
	kubetest.Eventually(t, time.Minute, "one node done at the target", func() (bool, string) {
		for _, name := range nodes {
			if rollout.DoneAt(getNode(t, name), target) {
				first = name
				return true, ""
			}
		}
		return false, condString(getPool(t, "hkf"))
	})
	job := hookjob.Run{Pool: "hkf", Node: first, Config: target, Hook: policy.AfterNode, Ref: policy.HookRef{Namespace: ns, Name: "smoke"}}.Name()
	// The node's own hook: that node stops, and with maxUnavailable 1 it takes the
	// pool's one slot, as a failed node would.
	waitHeld(t, "hkf", corev1.ConditionTrue, "NodeHookFailed", "hook after-node for node "+first+" failed: Job "+ns+"/"+job)
	msg := poolCondition(getPool(t, "hkf"), "RolloutHeld").Message
	if !strings.Contains(msg, "last lines: container hook exited 1: GET http://shop/healthz | curl: (7) Failed to connect to shop port 80: Connection refused") {
		t.Errorf("RolloutHeld message %q does not quote the hook's last lines", msg)
	}
	// The pool is synced again (a node change), still held; the other node waits.
	other := nodes[0]
	if other == first {
		other = nodes[1]
	}
	annotate(t, other, map[string]any{"example.com/touch": "1"})
	waitHeld(t, "hkf", corev1.ConditionTrue, "NodeHookFailed", "")
	if n := getNode(t, other); nodeanno.Desired(n) == target {
		t.Errorf("node %s was targeted after the hook of %s failed", other, first)
	}
}

// TestFailedNodeHookStopsOnlyThatNode: a node's own hook that fails (before-drain on
// one node, after-node on another, their Jobs failed by kwok) stops that node alone:
// the node whose before-drain hook failed is never targeted nor cordoned; the one
// whose after-node hook failed stays as it is; each counts against maxUnavailable
// (3), and the other two nodes go on within what is left, one at a time. The pool's
// RolloutHeld says NodeHookFailed with both Jobs' failures, each node gets a Warning
// Event HookFailed naming its Job, and the rollout is not over (the hooked-rollout
// mark stays).
func TestFailedNodeHookStopsOnlyThatNode(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "hooks-")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := env.CreateNode(ctx, "hkn-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), runner.Name, metav1.DeleteOptions{})
	})
	env.PlayJobs(t, ns, runner.Name)
	hookCronJob(t, ns, "prep", "")
	hookCronJob(t, ns, "smoke", "")
	pool := createPool(t, "hkn", ptr.To(intstr.FromInt32(3)), false)
	annotatePool(t, "hkn", map[string]any{
		policy.HookKey(policy.BeforeDrain): ns + "/prep", policy.HookKey(policy.AfterNode): ns + "/smoke",
	})
	v1 := machineConfig(t, "00-hkn", "hkn", "/etc/hkn", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "hkn", "rendered-hkn-old", "", "", "", "")
	// The Jobs of two runs exist before the controller would create them, failing:
	// it takes them as its own (they have its names), as after a restart.
	blocked, smoked := nodes[0], nodes[1]
	failJob := func(node string, hook policy.Hook, cronJob string, lines string) string {
		t.Helper()
		cj, err := env.Kube.BatchV1().CronJobs(ns).Get(ctx, cronJob, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cj.Spec.JobTemplate.Spec.Template.Annotations = map[string]string{kubetest.KwokFailAnnotation: lines}
		r := hookjob.Run{Pool: "hkn", Node: node, Config: target, Hook: hook, Ref: policy.HookRef{Namespace: ns, Name: cronJob}}
		if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, hookjob.Job(r, cj), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return r.Name()
	}
	prepJob := failJob(blocked, policy.BeforeDrain, "prep", "rsync: connection refused")
	smokeJob := failJob(smoked, policy.AfterNode, "smoke", "curl: (7) Failed to connect to shop port 80")
	startFakeAgent(t, "hkn", 200*time.Millisecond)
	applyMC(t, v1)
	startController(t, "lease-hkn", "hkn-ctrl")

	others := nodes[2:]
	kubetest.Eventually(t, 2*time.Minute, "the other nodes done at the target", func() (bool, string) {
		for _, name := range append([]string{smoked}, others...) {
			if !rollout.DoneAt(getNode(t, name), target) {
				return false, name + " not done; " + condString(getPool(t, "hkn"))
			}
		}
		return true, ""
	})
	waitHeld(t, "hkn", corev1.ConditionTrue, "NodeHookFailed", "2 nodes stopped by failed hooks ("+blocked+", "+smoked+")")
	msg := poolCondition(getPool(t, "hkn"), policy.HeldCondition).Message
	if !strings.Contains(msg, "hook before-drain for node "+blocked+" failed: Job "+ns+"/"+prepJob) ||
		!strings.Contains(msg, "last lines: container hook exited 1: rsync: connection refused") ||
		!strings.Contains(msg, "node "+blocked+" stops here") {
		t.Errorf("RolloutHeld message %q does not name the before-drain Job, its last lines and what it stops", msg)
	}
	n := getNode(t, blocked)
	if nodeanno.Desired(n) == target || n.Spec.Unschedulable {
		t.Errorf("node %s, whose before-drain hook failed, was targeted (%q) or cordoned (%t)", blocked, nodeanno.Desired(n), n.Spec.Unschedulable)
	}
	// Each stopped node has its failure in an Event of its own.
	for node, job := range map[string]string{blocked: prepJob, smoked: smokeJob} {
		kubetest.Eventually(t, time.Minute, "Event HookFailed on node "+node, func() (bool, string) {
			evs, err := env.Kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=HookFailed"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "Job "+ns+"/"+job) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
	}
	if p := getPool(t, "hkn"); p.Annotations[rollout.HookedRolloutKey] != target {
		t.Errorf("the hooked-rollout mark is %q while nodes are stopped, want %q", p.Annotations[rollout.HookedRolloutKey], target)
	}
}

// TestDriveRunsHooks: a terminal's drive (the TUI's, `rollout --wait`'s, with no
// controller) runs the pool's hooks as the controller does, and ends Updated only once
// the after-rollout hook has succeeded.
func TestDriveRunsHooks(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "hooks-")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := env.CreateNode(ctx, "dh-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), runner.Name, metav1.DeleteOptions{})
	})
	env.PlayJobs(t, ns, runner.Name)
	hookCronJob(t, ns, "backup", "")
	hookCronJob(t, ns, "notify", "")
	pool := createPool(t, "dh", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "dh", map[string]any{
		policy.HookKey(policy.BeforeRollout): ns + "/backup", policy.HookKey(policy.AfterRollout): ns + "/notify",
	})
	v1 := machineConfig(t, "00-dh", "dh", "/etc/dh", "v1")
	applyMC(t, v1)
	createNodes(t, "dh", "rendered-dh-old", "", "")
	startFakeAgent(t, "dh", 200*time.Millisecond)
	target := expectedRendered(t, pool, v1)
	controllertest.RenderByHand(t, env.MachineConfig, pool.Name, v1)

	var d drive
	end, err := d.run(ctx, t, "dh", "lease-dh", "mcotui-tui@test")
	if err != nil {
		t.Fatal(err)
	}
	if end != controller.DriveUpdated {
		t.Fatalf("the drive ended %q, want %q; last report %+v", end, controller.DriveUpdated, d.last())
	}
	for _, r := range []hookjob.Run{
		{Pool: "dh", Config: target, Hook: policy.BeforeRollout, Ref: policy.HookRef{Namespace: ns, Name: "backup"}},
		{Pool: "dh", Config: target, Hook: policy.AfterRollout, Ref: policy.HookRef{Namespace: ns, Name: "notify"}},
	} {
		if j := hookJob(t, r); j == nil || hookjob.StateOf(j) != hookjob.Succeeded {
			t.Errorf("%s: Job %s not succeeded when the drive ended: %+v", r, r.Name(), j)
		}
	}
	if p := getPool(t, "dh"); p.Annotations[rollout.HookedRolloutKey] != "" {
		t.Errorf("the hooked-rollout mark is still on the pool: %q", p.Annotations[rollout.HookedRolloutKey])
	}
}
