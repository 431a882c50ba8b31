package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
)

// installedNamespace is where the tests that apply install's manifests for real put
// mcotui. One namespace for all of them: the admission policies are cluster-scoped and
// name the agent's service account, so a second namespace would rebind them.
const installedNamespace = "mcotui-rbac"

var installOnce sync.Once

// applyInstall applies install's manifests (with --boot-images) to the test control
// plane once per test binary, with kubectl, as an administrator would.
func applyInstall(t *testing.T) {
	t.Helper()
	env := cluster.Env(t)
	installOnce.Do(func() {
		ctx := kubetest.Context(t)
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineAPINamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		out, _ := installDocs(t, "--namespace", installedNamespace, "--boot-images")
		apply := env.KubectlCommand(ctx, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(out)
		if res, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, res)
		}
	})
}

// agentOn returns the agent's credentials on node, as its DaemonSet pod has them.
func agentOn(t *testing.T, node string) *rest.Config {
	t.Helper()
	creds, err := cluster.Env(t).BoundToNode(kubetest.Context(t), installedNamespace, "mcotui-agent", node)
	if err != nil {
		t.Fatal(err)
	}
	return creds.Config
}

// policyWait bounds the wait for a policy just applied to be in force: the API server
// loads policies, bindings and their parameters through informers, within a second or
// two of their creation.
const policyWait = time.Minute

// refused checks that err is the API server's refusal by the named policy, and that the
// message says the rule.
func refused(t *testing.T, what string, err error, policy, message string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed", what)
	case !apierrors.IsForbidden(err):
		t.Errorf("%s: not refused by admission: %v", what, err)
	case !strings.Contains(err.Error(), "'"+policy+"'") || !strings.Contains(err.Error(), message):
		t.Errorf("%s: refused with %q, want policy %s saying %q", what, err, policy, message)
	}
}

func mergePatch(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return "allowed"
	}
	return err.Error()
}

// TestInstallPoliciesConfineTheAgent applies install's manifests and acts as the agent
// of node A with a real token bound to a pod on A: the admission policies refuse what A
// may not do to node B, or to itself, and let through what the agent does.
func TestInstallPoliciesConfineTheAgent(t *testing.T) {
	applyInstall(t)
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	const a, b = "policy-a", "policy-b"
	for _, n := range []string{a, b} {
		kubetest.CreateBareNode(t, env.Kube, n, map[string]string{"node-role.kubernetes.io/worker": ""},
			map[string]string{nodeanno.DesiredConfigKey: "rendered-worker-1", nodeanno.CurrentConfigKey: "rendered-worker-1"})
		t.Cleanup(func() {
			_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
			_ = env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	}
	cfgA := agentOn(t, a)
	kc, err := kubernetes.NewForConfig(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := mcfgclient.NewForConfig(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	nodes := kc.CoreV1().Nodes()
	patch := func(node string, p any) error {
		_, err := nodes.Patch(ctx, node, types.MergePatchType, mergePatch(t, p), metav1.PatchOptions{})
		return err
	}
	annotate := func(node, key, value string) error {
		return patch(node, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	}

	// The policies are in force once a write to B is refused; until then such a write
	// goes through, which is harmless here.
	kubetest.Eventually(t, policyWait, "the node policy in force", func() (bool, string) {
		err := annotate(b, nodeanno.StateKey, nodeanno.StateDone)
		return err != nil, "agent of A annotating B: " + errString(err)
	})

	// Node B, in every way.
	refused(t, "A annotates B's currentConfig", annotate(b, nodeanno.CurrentConfigKey, "rendered-worker-2"), deploy.NodePolicy, "may write only its own Node, not node "+b)
	refused(t, "A relabels B", patch(b, map[string]any{"metadata": map[string]any{"labels": map[string]any{"node-role.kubernetes.io/infra": ""}}}),
		deploy.NodePolicy, "may write only its own Node")
	refused(t, "A taints B", patch(b, map[string]any{"spec": map[string]any{"taints": []corev1.Taint{{Key: "evil", Effect: corev1.TaintEffectNoSchedule}}}}),
		deploy.NodePolicy, "may write only its own Node")
	refused(t, "A cordons B", patch(b, map[string]any{"spec": map[string]any{"unschedulable": true}}), deploy.NodePolicy, "may write only its own Node")

	// Node A: not what is the controller's or the administrator's.
	refused(t, "A sets its own desiredConfig", annotate(a, nodeanno.DesiredConfigKey, "rendered-infra-1"),
		deploy.NodePolicy, "may not change the annotations "+nodeanno.DesiredConfigKey+" of node "+a)
	refused(t, "A relabels itself into another pool", patch(a, map[string]any{"metadata": map[string]any{"labels": map[string]any{"node-role.kubernetes.io/infra": ""}}}),
		deploy.NodePolicy, "may not change the labels of node "+a)
	refused(t, "A removes its own role label", patch(a, map[string]any{"metadata": map[string]any{"labels": map[string]any{"node-role.kubernetes.io/worker": nil}}}),
		deploy.NodePolicy, "may not change the labels of node "+a)
	refused(t, "A taints itself", patch(a, map[string]any{"spec": map[string]any{"taints": []corev1.Taint{{Key: "evil", Effect: corev1.TaintEffectNoSchedule}}}}),
		deploy.NodePolicy, "may not change the taints of node "+a)
	refused(t, "A sets its providerID", patch(a, map[string]any{"spec": map[string]any{"providerID": "aws:///evil"}}),
		deploy.NodePolicy, "may change only spec.unschedulable")
	refused(t, "A adds a finalizer to itself", patch(a, map[string]any{"metadata": map[string]any{"finalizers": []string{"example.com/stuck"}}}),
		deploy.NodePolicy, "no finalizers")
	_, err = nodes.Patch(ctx, a, types.MergePatchType, mergePatch(t, map[string]any{"status": map[string]any{"phase": "Running"}}), metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) {
		t.Errorf("A writes its own status: %v", err)
	}

	// What the agent does, through its real cluster code: report, cordon, uncordon,
	// write its MachineConfigNode.
	agent, err := nodeagent.NewNodeAgent(ctx, cfgA, a, "worker", nodeagent.NodeAgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if err := agent.Annotate(ctx, map[string]string{nodeanno.CurrentConfigKey: "rendered-worker-1", nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: "because"}); err != nil {
		t.Errorf("agent reports on its node: %v", err)
	}
	if err := agent.Annotate(ctx, map[string]string{nodeanno.PostConfigActionKey: "Rebooting"}); err != nil {
		t.Errorf("agent marks its reboot: %v", err)
	}
	if err := agent.Annotate(ctx, map[string]string{nodeanno.RetryKey: nodeanno.Retry{Attempt: 2, Next: time.Now().Add(time.Minute)}.String()}); err != nil {
		t.Errorf("agent publishes its next retry: %v", err)
	}
	if err := agent.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: "", nodeanno.PostConfigActionKey: "", nodeanno.RetryKey: ""}); err != nil {
		t.Errorf("agent clears its reason and retry: %v", err)
	}
	if err := agent.Cordon(ctx); err != nil {
		t.Errorf("agent cordons its node: %v", err)
	}
	if n, err := env.Kube.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{}); err != nil || !n.Spec.Unschedulable || nodeanno.CordonedBy(n) != nodeanno.CordonedByAgent {
		t.Errorf("node %s after the agent's cordon: %v", a, err)
	}
	if err := agent.Uncordon(ctx); err != nil {
		t.Errorf("agent uncordons its node: %v", err)
	}
	if err := agent.SetConditions(ctx, "rendered-worker-1", phase.Prepared("[None]", false)); err != nil {
		t.Errorf("agent writes its MachineConfigNode: %v", err)
	}

	// MachineConfigNodes: B's, or one of A's that names B.
	mcns := mc.MachineconfigurationV1().MachineConfigNodes()
	nodeB, err := env.Kube.CoreV1().Nodes().Get(ctx, b, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcnB, err := kubetest.CreateMachineConfigNode(ctx, env.MachineConfig, nodeB, kubetest.MachineConfigNode{Pool: "worker", Desired: "rendered-worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	mcnB.Spec.ConfigVersion.Desired = "rendered-worker-2"
	_, err = mcns.Update(ctx, mcnB, metav1.UpdateOptions{})
	refused(t, "A updates B's MachineConfigNode", err, deploy.MachineConfigNodePolicy, "may write only the MachineConfigNode "+a+", not "+b)
	mcnB.Status.Conditions = []metav1.Condition{{Type: string(mcfgv1.MachineConfigNodeUpdated), Status: metav1.ConditionTrue, Reason: "Updated", Message: "lies", LastTransitionTime: metav1.Now()}}
	_, err = mcns.UpdateStatus(ctx, mcnB, metav1.UpdateOptions{})
	refused(t, "A updates B's MachineConfigNode status", err, deploy.MachineConfigNodePolicy, "may write only the MachineConfigNode "+a)
	mcnA, err := mcns.Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcnA.Spec.Node.Name = b
	_, err = mcns.Update(ctx, mcnA, metav1.UpdateOptions{})
	// The CRD's own rule (spec.node.name is metadata.name) refuses this before admission.
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.node.name should match metadata.name") {
		t.Errorf("A points its MachineConfigNode at B: %v", err)
	}

	// Evictions: a pod on B is refused, a pod on A goes. A closed budget on B's pod makes
	// the probe safe: were the policy not yet in force, the eviction API would refuse it
	// with 429 instead of evicting it.
	ns, err := env.CreateNamespace(ctx, "policy-")
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}
		if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("on-b", b)
	pod("on-a", a)
	kubetest.CreateBudget(t, env.Kube, ns, "on-b", 0)
	evict := func(name string) error {
		return kc.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	kubetest.Eventually(t, policyWait, "the eviction policy in force", func() (bool, string) {
		err := evict("on-b")
		return apierrors.IsForbidden(err), "agent of A evicting a pod on B: " + errString(err)
	})
	refused(t, "A evicts a pod on B", evict("on-b"), deploy.EvictionPolicy, "may evict only pods bound to its node: pod "+ns+"/on-b is on node "+b)
	if err := evict("on-a"); err != nil {
		t.Errorf("A evicts a pod on A: %v", err)
	}

	// Events about other things than its node.
	event := func(kind, name string) error {
		_, err := kc.CoreV1().Events("default").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "policy-"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, APIVersion: "v1"},
			Reason:         "UpdateFailed", Message: "fake", Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: "mcotui-agent"},
		}, metav1.CreateOptions{})
		return err
	}
	refused(t, "A records an event on B", event("Node", b), deploy.EventPolicy, "may record events only about its own Node, not about Node "+b)
	if err := event("Node", a); err != nil {
		t.Errorf("A records an event on A: %v", err)
	}
	// An event about B, recorded by someone else, cannot be patched by A into one about
	// A (the policy checked only the new object).
	evB, err := env.Kube.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "policy-b-"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: b, APIVersion: "v1"},
		Reason:         "Updated", Message: "B's own", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kc.CoreV1().Events("default").Patch(ctx, evB.Name, types.MergePatchType,
		mergePatch(t, map[string]any{"involvedObject": map[string]any{"name": a}, "message": "taken over"}), metav1.PatchOptions{})
	refused(t, "A patches an event about B into one about A", err, deploy.EventPolicy, "not about Node "+b+" (an event about it cannot be made one about "+a+")")

	// The agent's service account with a token bound to no pod carries no node: every
	// write is refused, saying why.
	tr, err := env.Kube.CoreV1().ServiceAccounts(installedNamespace).CreateToken(ctx, "mcotui-agent", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unbound := rest.AnonymousClientConfig(env.Config)
	unbound.BearerToken = tr.Status.Token
	ukc, err := kubernetes.NewForConfig(unbound)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ukc.CoreV1().Nodes().Patch(ctx, a, types.MergePatchType, mergePatch(t, map[string]any{"spec": map[string]any{"unschedulable": true}}), metav1.PatchOptions{})
	refused(t, "an unbound agent token cordons A", err, deploy.NodePolicy, "carry no "+deploy.NodeNameClaim+" claim")
}
