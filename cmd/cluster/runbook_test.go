package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// The runbooks' commands (docs/runbooks) run here against the test control plane, with
// mcotui's controller: each command is first found, word for word, in its runbook, then
// run with the runbook's placeholders (worker, NODE, rendered-worker-OLD, ...) replaced
// by this cluster's names, and its effect checked.

// runbookCommand fails the test unless runbook (under docs/runbooks) shows command
// verbatim, its line continuations joined, and returns command with r's replacements.
func runbookCommand(t *testing.T, runbook, command string, r *strings.Replacer) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("docs", "runbooks", runbook))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(data), "\\\n", " ")), " ")
	if !strings.Contains(text, command) {
		t.Fatalf("docs/runbooks/%s no longer shows %q: update this test with the runbook", runbook, command)
	}
	return r.Replace(command)
}

// shell runs a runbook's command line with sh, kubectl on PATH and KUBECONFIG set to the
// control plane, and returns its output; a failure fails the test.
func shell(t *testing.T, env *kubetest.Env, line string) string {
	t.Helper()
	c := exec.CommandContext(kubetest.Context(t), "sh", "-c", line)
	c.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath,
		"PATH="+filepath.Dir(env.Binaries.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// TestRunbookUndoCompletedRollout follows docs/runbooks/undo-rollout.md: after a rollout
// completed, the TUI's rollback has nothing to return to; the pin by hand takes every
// node back to the previous rendered config and holds it there; removing the pin rolls
// forward; reverting the MachineConfig renders the previous config's very name.
func TestRunbookUndoCompletedRollout(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "undo", 2, nil)
	c.StartController(t)
	c.StartAgent(t, 0)
	c.WaitUpdated(t)
	old := c.GetPool(t).Spec.Configuration.Name
	c.SetFile(t, "v2")
	var newCfg string
	cmdtest.WaitFor(t, "the pool rolled out v2", func() bool {
		p := c.GetPool(t)
		newCfg = p.Spec.Configuration.Name
		return newCfg != old && rollout.PoolUpdated(p)
	})
	if _, err := rollout.RollbackTarget(c.GetPool(t)); err == nil || !strings.Contains(err.Error(), "every node already runs") {
		t.Errorf("the TUI's rollback of a completed rollout: %v; the runbook says it refuses", err)
	}
	r := strings.NewReplacer("rendered-worker-OLD", old, "rendered-worker-NEW", newCfg, "mcp worker", "mcp "+c.Pool)

	sources := shell(t, c.Env, runbookCommand(t, "undo-rollout.md",
		"kubectl get mcp worker -o jsonpath='{.status.configuration.source[*].name}'", r))
	if !strings.Contains(sources, "00-undo") {
		t.Errorf("the pool's sources: %q, want its MachineConfig 00-undo", sources)
	}

	shell(t, c.Env, runbookCommand(t, "undo-rollout.md",
		"kubectl annotate mcp worker mcotui.io/rollback-to=rendered-worker-OLD mcotui.io/rollback-from=rendered-worker-NEW", r))
	cmdtest.WaitFor(t, "every node back on "+old, func() bool {
		p := c.GetPool(t)
		return p.Spec.Configuration.Name == old && rollout.PoolUpdated(p)
	})
	for _, n := range c.Nodes {
		node, err := c.Env.Kube.CoreV1().Nodes().Get(kubetest.Context(t), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur := nodeanno.Current(node); cur != old {
			t.Errorf("node %s runs %s after the rollback, want %s", n, cur, old)
		}
	}
	code, out, errOut := runMcotui(t, c.Env, "status", c.Pool)
	if code != 0 || !strings.Contains(out, old) {
		t.Errorf("mcotui status %s: exit %d, want CONFIG %s:\n%s%s", c.Pool, code, old, out, errOut)
	}

	shell(t, c.Env, runbookCommand(t, "undo-rollout.md",
		"kubectl annotate mcp worker mcotui.io/rollback-to- mcotui.io/rollback-from-", r))
	cmdtest.WaitFor(t, "the pool rolled forward to "+newCfg, func() bool {
		p := c.GetPool(t)
		return p.Spec.Configuration.Name == newCfg && rollout.PoolUpdated(p)
	})

	// "kubectl apply -f the previous version": the same MachineConfigs render the same name.
	runbookCommand(t, "undo-rollout.md", "kubectl delete mc 99-worker-chrony # or kubectl apply -f the previous version", r)
	c.SetFile(t, "v1")
	cmdtest.WaitFor(t, "the pool rendered "+old+" again", func() bool {
		p := c.GetPool(t)
		return p.Spec.Configuration.Name == old && rollout.PoolUpdated(p)
	})
}

// TestRunbookNodeCommands follows the node commands of degraded-unit.md,
// stuck-cordoned.md, controller-not-leading.md and refused-config.md on a pool with a
// node whose updates fail.
func TestRunbookNodeCommands(t *testing.T) {
	env := cluster.Env(t)
	c := cmdtest.NewRolloutCluster(t, env, "rbn", 2, nil)
	ns := c.StartController(t)
	failing, cordoned := c.Nodes[0], c.Nodes[1]
	c.StartAgent(t, 0, failing)
	r := strings.NewReplacer("NODE", failing, "POOL", c.Pool, "-n mcotui", "-n "+ns)

	// What the runbook says status shows: the pool DEGRADED, a degraded machine.
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcotui status %s, last:\n%s", c.Pool, last)
		}
	})
	cmdtest.WaitFor(t, "pool "+c.Pool+" degraded in mcotui status", func() bool {
		code, out, _ := runMcotui(t, env, "status", c.Pool)
		last = out
		for _, l := range strings.Split(out, "\n") {
			// CONFIG is empty until a config reached every node: count from the end.
			if f := strings.Fields(l); code == 0 && len(f) >= 9 && f[0] == c.Pool {
				return f[len(f)-6] == "True" && f[len(f)-2] == "1"
			}
		}
		return false
	})
	for _, format := range []string{"wide", "yaml"} {
		if code, _, errOut := runMcotui(t, env, "status", c.Pool, "-o", format); code != 0 {
			t.Errorf("mcotui status %s -o %s: exit %d: %s", c.Pool, format, code, errOut)
		}
	}
	// The failing node takes the pool's one unavailable slot (maxUnavailable 1): the
	// other node gets no target, as degraded-unit.md says.
	if d := nodeanno.Desired(getNode(t, env, cordoned)); d != "" {
		t.Errorf("node %s was given %s while %s fails at maxUnavailable 1", cordoned, d, failing)
	}
	annotations := shell(t, env, runbookCommand(t, "stuck-cordoned.md",
		"kubectl get node NODE -o jsonpath='{.metadata.annotations}'; echo", r))
	if !strings.Contains(annotations, `"machineconfiguration.openshift.io/state":"Degraded"`) {
		t.Errorf("the node's annotations: %s; want state Degraded", annotations)
	}

	// The retry the runbooks ask for: the state goes back to Working, and the node's
	// agent (here one that fails every time) takes it up and fails again.
	retry := "kubectl annotate node NODE machineconfiguration.openshift.io/state=Working --overwrite"
	for _, rb := range []string{"degraded-unit.md", "full-disk.md"} {
		runbookCommand(t, rb, retry, r)
	}
	rv := getNode(t, env, failing).ResourceVersion
	shell(t, env, r.Replace(retry))
	cmdtest.WaitFor(t, failing+" retried and degraded again", func() bool {
		n := getNode(t, env, failing)
		return n.ResourceVersion != rv && nodeanno.State(n) == nodeanno.StateDegraded
	})

	// A node the agent cordoned and that no agent will finish: uncordon, remove the mark.
	patchNode(t, env, cordoned, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{nodeanno.CordonedByKey: nodeanno.CordonedByAgent}},
		"spec":     map[string]any{"unschedulable": true},
	})
	rc := strings.NewReplacer("NODE", cordoned)
	shell(t, env, runbookCommand(t, "stuck-cordoned.md", "kubectl uncordon NODE", rc))
	shell(t, env, runbookCommand(t, "stuck-cordoned.md", "kubectl annotate node NODE mcotui.io/cordoned-by-", rc))
	if n := getNode(t, env, cordoned); n.Spec.Unschedulable || n.Annotations[nodeanno.CordonedByKey] != "" {
		t.Errorf("node %s after the runbook: unschedulable %v, cordoned-by %q", cordoned, n.Spec.Unschedulable, n.Annotations[nodeanno.CordonedByKey])
	}

	holder := shell(t, env, runbookCommand(t, "controller-not-leading.md",
		`kubectl -n mcotui get lease mcotui-controller -o jsonpath='{.spec.holderIdentity}{"\n"}{.spec.renewTime}{"\n"}'`, r))
	if !strings.HasPrefix(holder, "test-controller\n") {
		t.Errorf("the Lease's holder: %q, want the test's controller", holder)
	}

	pools := shell(t, env, runbookCommand(t, "refused-config.md",
		"kubectl get mcp -o custom-columns=NAME:.metadata.name,TARGET:.spec.configuration.name,CURRENT:.status.configuration.name", r))
	target := c.GetPool(t).Spec.Configuration.Name
	if !strings.Contains(pools, c.Pool) || !strings.Contains(pools, target) {
		t.Errorf("the pools' configs: %s; want %s on %s", pools, c.Pool, target)
	}
}

func getNode(t *testing.T, env *kubetest.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func patchNode(t *testing.T, env *kubetest.Env, name string, patch map[string]any) {
	t.Helper()
	b, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRunbookDrainBlocked runs the budget commands of drain-blocked.md on a budget as the
// runbook finds it: minAvailable 1, no disruption allowed.
func TestRunbookDrainBlocked(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "shop-")
	if err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBudget(t, env.Kube, ns, "cart", 0)
	one := int32(1)
	labels := map[string]string{"app": "cart"}
	if _, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cart"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "registry.example/cart:1"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cart-0", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "registry.example/cart:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("-n shop", "-n "+ns)

	out := shell(t, env, runbookCommand(t, "drain-blocked.md", "kubectl -n shop get pdb cart", r))
	// NAME, MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS, AGE
	if lines := strings.Split(out, "\n"); len(lines) < 2 || !strings.Contains(lines[0], "ALLOWED DISRUPTIONS") ||
		len(strings.Fields(lines[1])) != 5 || strings.Fields(lines[1])[0] != "cart" || strings.Fields(lines[1])[3] != "0" {
		t.Errorf("kubectl get pdb: %q; want cart with 0 allowed disruptions", out)
	}
	shell(t, env, runbookCommand(t, "drain-blocked.md", "kubectl -n shop get pods -o wide -l app=cart", r))

	shell(t, env, runbookCommand(t, "drain-blocked.md", "kubectl -n shop scale deploy/cart --replicas=3", r))
	if d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "cart", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("deployment cart after the scale: %v %v", d.Spec.Replicas, err)
	}
	shell(t, env, runbookCommand(t, "drain-blocked.md",
		`kubectl -n shop patch pdb cart --type merge -p '{"spec":{"minAvailable":null,"maxUnavailable":1}}'`, r))
	pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "cart", metav1.GetOptions{})
	if err != nil || pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("budget cart after the patch: %+v %v", pdb.Spec, err)
	}
	shell(t, env, runbookCommand(t, "drain-blocked.md", "kubectl -n shop delete pod cart-0", r))
	if _, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "cart-0", metav1.GetOptions{}); err == nil {
		t.Error("pod cart-0 is still there after the runbook's delete")
	}
}
