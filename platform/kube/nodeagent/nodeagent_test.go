package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// fast are the options of every test agent: drain attempts a fraction of a second apart.
func fast(t *testing.T) NodeAgentOptions {
	return NodeAgentOptions{
		DrainRetry:   200 * time.Millisecond,
		EvictTimeout: 2 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

func newAgent(t *testing.T, node, pool string, opts NodeAgentOptions) *NodeAgent {
	t.Helper()
	a, err := NewNodeAgent(kubetest.Context(t), env.Config, node, pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

func TestCordonAndUncordon(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "cordon-0", nil, nil)
	a := newAgent(t, "cordon-0", "", fast(t))

	if err := a.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, "cordon-0")
	if !n.Spec.Unschedulable || nodeanno.CordonedBy(n) != nodeanno.CordonedByAgent || nodeanno.AdminCordoned(n) {
		t.Fatalf("after Cordon: unschedulable=%t annotations=%v", n.Spec.Unschedulable, n.Annotations)
	}
	if err := a.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	if again := getNode(t, "cordon-0"); again.ResourceVersion != n.ResourceVersion {
		t.Fatalf("a second Cordon wrote the node (resourceVersion %s -> %s)", n.ResourceVersion, again.ResourceVersion)
	}

	if err := a.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	n = getNode(t, "cordon-0")
	if n.Spec.Unschedulable {
		t.Fatal("the node is still unschedulable after Uncordon")
	}
	if _, ok := n.Annotations[nodeanno.CordonedByKey]; ok {
		t.Fatalf("Uncordon left the %s annotation", nodeanno.CordonedByKey)
	}
	if err := a.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	if again := getNode(t, "cordon-0"); again.ResourceVersion != n.ResourceVersion {
		t.Fatal("Uncordon of a schedulable node wrote it")
	}
}

// An administrator's cordon survives the agent: Cordon leaves it unmarked, Uncordon
// leaves it cordoned.
func TestAdminCordonIsKept(t *testing.T) {
	ctx := kubetest.Context(t)
	n := kubetest.CreateBareNode(t, env.Kube, "cordon-admin", nil, nil)
	n.Spec.Unschedulable = true
	n, err := env.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}) // kubectl cordon
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, "cordon-admin", "", fast(t))
	cached, err := a.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !nodeanno.AdminCordoned(cached) {
		t.Fatal("AdminCordoned is false for a node cordoned by kubectl")
	}

	if err := a.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	after := getNode(t, "cordon-admin")
	if after.ResourceVersion != n.ResourceVersion {
		t.Fatalf("Cordon wrote an admin-cordoned node: annotations %v", after.Annotations)
	}
	if err := a.Uncordon(ctx); err != nil {
		t.Fatal(err)
	}
	after = getNode(t, "cordon-admin")
	if !after.Spec.Unschedulable || after.ResourceVersion != n.ResourceVersion {
		t.Fatalf("Uncordon touched an admin-cordoned node: unschedulable=%t", after.Spec.Unschedulable)
	}
}

func TestAnnotate(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "annotate-0", nil, map[string]string{"example.com/keep": "yes", nodeanno.ReasonKey: "old failure"})
	a := newAgent(t, "annotate-0", "", fast(t))

	err := a.Annotate(ctx, map[string]string{
		nodeanno.StateKey:         nodeanno.StateWorking,
		nodeanno.DesiredDrainKey:  "drain-rendered-worker-b",
		nodeanno.ReasonKey:        "",
		"example.com/never-there": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := getNode(t, "annotate-0").Annotations
	want := map[string]string{
		"example.com/keep":       "yes",
		nodeanno.StateKey:        nodeanno.StateWorking,
		nodeanno.DesiredDrainKey: "drain-rendered-worker-b",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("annotations = %v, want %v", got, want)
	}
	if err := a.Annotate(ctx, nil); err != nil {
		t.Fatalf("Annotate with nothing to do: %v", err)
	}
}

// receive waits for a value from Changes.
func receive(t *testing.T, a *NodeAgent, what string) {
	t.Helper()
	select {
	case <-a.Changes():
	case <-time.After(10 * time.Second):
		t.Fatalf("no value from Changes within 10s after %s", what)
	}
}

// quiet empties Changes, then checks it stays empty while nothing changes.
func quiet(t *testing.T, a *NodeAgent) {
	t.Helper()
	select {
	case <-a.Changes():
	default:
	}
	select {
	case <-a.Changes():
		t.Fatal("Changes fired while nothing changed")
	case <-time.After(300 * time.Millisecond):
	}
}

func TestChanges(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "changes-0", nil, nil)
	kubetest.CreateBareNode(t, env.Kube, "changes-other", nil, nil)
	a := newAgent(t, "changes-0", "worker", fast(t))
	quiet(t, a)

	// Someone else's write: the controller setting the desired config.
	patch := []byte(`{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-b"}}}`)
	if _, err := env.Kube.CoreV1().Nodes().Patch(ctx, "changes-0", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	receive(t, a, "a change of the node's annotations")
	n, err := a.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nodeanno.Desired(n) != "rendered-worker-b" {
		t.Fatalf("Node after the change reads desiredConfig %q", nodeanno.Desired(n))
	}

	// Other nodes are not watched.
	quiet(t, a)
	if _, err := env.Kube.CoreV1().Nodes().Patch(ctx, "changes-other", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	quiet(t, a)

	// The MachineConfigNode is watched too.
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.NeedsUpdate("changes-0")); err != nil {
		t.Fatal(err)
	}
	receive(t, a, "the MachineConfigNode was created")
}

func TestDisruptionPolicy(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "policy-0", nil, nil)
	a := newAgent(t, "policy-0", "", fast(t))

	t.Run("without MachineConfiguration", func(t *testing.T) {
		p, err := a.DisruptionPolicy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, disruption.DefaultPolicy()) {
			t.Fatalf("policy = %+v, want the defaults", p)
		}
	})

	t.Run("without its CRD", func(t *testing.T) {
		// A cluster without the CRD answers 404 Not Found for the resource, the same
		// answer as for any path it does not serve, which a prefix guarantees here.
		cfg := rest.CopyConfig(env.Config)
		cfg.Host += "/no-such-api"
		oc, err := operatorclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := &NodeAgent{name: a.name, clients: &kube.Clients{Operator: oc}}
		p, err := b.DisruptionPolicy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, disruption.DefaultPolicy()) {
			t.Fatalf("policy = %+v, want the defaults", p)
		}
	})

	t.Run("with a user policy", func(t *testing.T) {
		user := operatorv1.NodeDisruptionPolicyConfig{
			Files: []operatorv1.NodeDisruptionPolicySpecFile{
				{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{
					{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}},
				}},
				{Path: disruption.ContainerRegistryConfPath, Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.DrainSpecAction}}},
			},
			SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}},
		}
		mcs := env.Operator.OperatorV1().MachineConfigurations()
		_, err := mcs.Create(ctx, &operatorv1.MachineConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName},
			Spec: operatorv1.MachineConfigurationSpec{
				StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
				NodeDisruptionPolicy:  user,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = mcs.Delete(context.Background(), bootimage.MachineConfigurationName, metav1.DeleteOptions{})
		})

		p, err := a.DisruptionPolicy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := disruption.Merge(disruption.DefaultPolicy(), user); !reflect.DeepEqual(p, want) {
			t.Fatalf("policy = %+v, want %+v", p, want)
		}
		if acts, at, ok := disruption.MatchFile(p, "/etc/chrony.conf"); !ok || at != "/etc/chrony.conf" || len(acts) != 1 || acts[0].Type != operatorv1.RestartStatusAction {
			t.Fatalf("the user's file entry is not in the policy: %v %q %t", acts, at, ok)
		}
		if acts, _, _ := disruption.MatchFile(p, disruption.ContainerRegistryConfPath); len(acts) != 1 || acts[0].Type != operatorv1.DrainStatusAction {
			t.Fatalf("the user's entry does not replace the default for %s: %v", disruption.ContainerRegistryConfPath, acts)
		}
	})
}

func TestMachineConfig(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "mc-0", nil, nil)
	a := newAgent(t, "mc-0", "", fast(t))
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-mc0"},
		Spec:       mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/example/os@sha256:0123"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := a.MachineConfig(ctx, "rendered-worker-mc0")
	if err != nil {
		t.Fatal(err)
	}
	if mc.Spec.OSImageURL != "quay.io/example/os@sha256:0123" {
		t.Fatalf("MachineConfig read back with osImageURL %q", mc.Spec.OSImageURL)
	}
	_, err = a.MachineConfig(ctx, "rendered-worker-missing")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "rendered-worker-missing") {
		t.Fatalf("a missing MachineConfig: want NotFound naming it, got %v", err)
	}
}

func getMCN(t *testing.T, name string) *mcfgv1.MachineConfigNode {
	t.Helper()
	mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get MachineConfigNode %s: %v", name, err)
	}
	return mcn
}

func condition(t *testing.T, mcn *mcfgv1.MachineConfigNode, typ mcfgv1.StateProgress) metav1.Condition {
	t.Helper()
	c, ok := phase.Find(mcn.Status.Conditions, typ)
	if !ok {
		t.Fatalf("MachineConfigNode %s has no %s condition", mcn.Name, typ)
	}
	return c
}

func TestSetConditions(t *testing.T) {
	ctx := kubetest.Context(t)
	node := kubetest.CreateBareNode(t, env.Kube, "mcn-0", map[string]string{"node-role.kubernetes.io/worker": ""},
		map[string]string{nodeanno.CurrentConfigKey: "rendered-worker-a", nodeanno.DesiredConfigKey: "rendered-worker-b"})
	a := newAgent(t, "mcn-0", "", fast(t))

	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.CordonDone()); err != nil {
		t.Fatal(err)
	}
	mcn := getMCN(t, "mcn-0")
	if mcn.Spec.Node.Name != "mcn-0" || mcn.Spec.Pool.Name != "worker" || mcn.Spec.ConfigVersion.Desired != "rendered-worker-b" {
		t.Fatalf("spec = %+v", mcn.Spec)
	}
	if refs := mcn.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != node.UID {
		t.Fatalf("ownerReferences = %+v, want the node", refs)
	}
	if len(mcn.Status.Conditions) != len(phase.Initial(metav1.Now())) {
		t.Fatalf("%d conditions, want every type MCO creates", len(mcn.Status.Conditions))
	}
	if c := condition(t, mcn, phase.Cordoned); c.Status != metav1.ConditionTrue || c.Reason != "UpdateExecutedCordoned" || c.Message != phase.CordonDone().Message {
		t.Fatalf("Cordoned = %+v", c)
	}
	if c := condition(t, mcn, phase.UpdateExecuted); c.Status != metav1.ConditionUnknown {
		t.Fatalf("UpdateExecuted = %+v", c)
	}
	if c := condition(t, mcn, phase.RebootedNode); c.Status != metav1.ConditionFalse || c.Reason != "NotYetOccurred" {
		t.Fatalf("RebootedNode = %+v", c)
	}
	if v := mcn.Status.ConfigVersion; v == nil || v.Current != "rendered-worker-a" || v.Desired != "rendered-worker-b" {
		t.Fatalf("status.configVersion = %+v", v)
	}
	if mcn.Status.ObservedGeneration != mcn.Generation {
		t.Fatalf("status.observedGeneration = %d, generation %d", mcn.Status.ObservedGeneration, mcn.Generation)
	}

	// The same write again is no write at all.
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.CordonDone()); err != nil {
		t.Fatal(err)
	}
	if again := getMCN(t, "mcn-0"); again.ResourceVersion != mcn.ResourceVersion {
		t.Fatalf("a repeated write changed the resourceVersion %s -> %s", mcn.ResourceVersion, again.ResourceVersion)
	}

	// The next phase, at once: the write must not be lost to a cache that lags.
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.DrainDone("drain-rendered-worker-b")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.Executing(), phase.CordonDone()); err != nil {
		t.Fatal(err)
	}
	mcn = getMCN(t, "mcn-0")
	if c := condition(t, mcn, phase.Drained); c.Status != metav1.ConditionTrue || c.Reason != "UpdateExecutedDrained" {
		t.Fatalf("Drained = %+v", c)
	}

	// A message longer than the schema allows is cut, not refused.
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.DrainFailed(strings.Repeat("é", 40000))); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, getMCN(t, "mcn-0"), phase.Drained); len(c.Message) > maxConditionMessage || len(c.Message) < maxConditionMessage-4 || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, "é…") {
		t.Fatalf("a long message was stored with %d bytes, ending %q", len(c.Message), c.Message[len(c.Message)-8:])
	}

	// The node reaches the desired config: status.configVersion follows its annotation.
	if err := a.Annotate(ctx, map[string]string{nodeanno.CurrentConfigKey: "rendered-worker-b"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetConditions(ctx, "rendered-worker-b", phase.UpToDate("mcn-0")); err != nil {
		t.Fatal(err)
	}
	mcn = getMCN(t, "mcn-0")
	if v := mcn.Status.ConfigVersion; v == nil || v.Current != "rendered-worker-b" {
		t.Fatalf("status.configVersion = %+v after the update", v)
	}
	if c := condition(t, mcn, phase.Drained); c.Status != metav1.ConditionFalse || !strings.HasPrefix(c.Message, "Action during update to rendered-worker-b: ") {
		t.Fatalf("Drained after Updated = %+v", c)
	}

	// A new target: the spec follows, and observedGeneration with it.
	if err := a.SetConditions(ctx, "rendered-worker-c", phase.NeedsUpdate("mcn-0")); err != nil {
		t.Fatal(err)
	}
	mcn = getMCN(t, "mcn-0")
	if mcn.Spec.ConfigVersion.Desired != "rendered-worker-c" || mcn.Status.ConfigVersion.Desired != "rendered-worker-c" || mcn.Status.ObservedGeneration != mcn.Generation || mcn.Generation < 2 {
		t.Fatalf("after a new target: spec %+v, status.configVersion %+v, observedGeneration %d, generation %d",
			mcn.Spec.ConfigVersion, mcn.Status.ConfigVersion, mcn.Status.ObservedGeneration, mcn.Generation)
	}
}

func TestSetConditionsPool(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "mcn-infra", map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": ""}, nil)
	kubetest.CreateBareNode(t, env.Kube, "mcn-given", map[string]string{"node-role.kubernetes.io/worker": ""}, nil)
	kubetest.CreateBareNode(t, env.Kube, "mcn-two-roles", map[string]string{"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/gpu": ""}, nil)

	if err := newAgent(t, "mcn-infra", "", fast(t)).SetConditions(ctx, "rendered-infra-a", phase.NeedsUpdate("mcn-infra")); err != nil {
		t.Fatal(err)
	}
	if p := getMCN(t, "mcn-infra").Spec.Pool.Name; p != "infra" {
		t.Fatalf("pool derived from roles worker and infra = %q, want infra", p)
	}
	// No current config yet: status.configVersion is left out, and the write succeeds.
	if v := getMCN(t, "mcn-infra").Status.ConfigVersion; v != nil {
		t.Fatalf("status.configVersion = %+v for a node without a current config", v)
	}

	if err := newAgent(t, "mcn-given", "canary", fast(t)).SetConditions(ctx, "rendered-canary-a", phase.NeedsUpdate("mcn-given")); err != nil {
		t.Fatal(err)
	}
	if p := getMCN(t, "mcn-given").Spec.Pool.Name; p != "canary" {
		t.Fatalf("pool = %q, want the one given", p)
	}

	err := newAgent(t, "mcn-two-roles", "", fast(t)).SetConditions(ctx, "rendered-infra-a", phase.NeedsUpdate("mcn-two-roles"))
	if err == nil || !strings.Contains(err.Error(), "gpu, infra") {
		t.Fatalf("two custom roles: want an error naming them, got %v", err)
	}

	err = newAgent(t, "mcn-given", "canary", fast(t)).SetConditions(ctx, "Rendered_Canary", phase.NeedsUpdate("mcn-given"))
	if err == nil || !strings.Contains(err.Error(), `"Rendered_Canary"`) {
		t.Fatalf("an invalid desired config: want an error naming it, got %v", err)
	}
}

// The schema refuses an empty status.configVersion.current, which the typed client
// always sends: why statusVersion leaves configVersion out instead.
func TestSchemaRefusesEmptyCurrent(t *testing.T) {
	ctx := kubetest.Context(t)
	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := mcns.Create(ctx, &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: "mcn-empty-current"},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node: mcfgv1.MCOObjectReference{Name: "mcn-empty-current"}, Pool: mcfgv1.MCOObjectReference{Name: "worker"},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-a"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Desired: "rendered-worker-a"}
	if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("status.configVersion with an empty current: want 422 Invalid, got %v", err)
	}
}

func TestEvent(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "event-0", nil, nil)
	a := newAgent(t, "event-0", "", fast(t))
	a.Event(corev1.EventTypeNormal, "SetDesiredConfig", "Targeted rendered-worker-b")

	var got corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": "event-0"}.String(),
		})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		got = list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no event on node event-0: %v", err)
	}
	if got.Reason != "SetDesiredConfig" || got.Message != "Targeted rendered-worker-b" || got.Source.Component != AgentComponent ||
		got.Source.Host != "event-0" || got.InvolvedObject.UID != "event-0" {
		t.Fatalf("event = reason %q message %q source %+v involvedObject %+v", got.Reason, got.Message, got.Source, got.InvolvedObject)
	}
}

func TestNewNodeAgentWithoutCRDs(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Host += "/no-such-api" // every API answers 404, as a cluster without the CRDs does for theirs
	_, err := NewNodeAgent(kubetest.Context(t), cfg, "crd-0", "", fast(t))
	if err == nil || !strings.Contains(err.Error(), "machineconfignodes.machineconfiguration.openshift.io/v1") || !strings.Contains(err.Error(), "mcotui install") {
		t.Fatalf("want an error saying the CRDs are missing, got %v", err)
	}
}

// TestPoolOf: the agent places its node by rollout.RolePool (the precedence is core's
// test) and tells its operator what to do about a node of two custom roles.
func TestPoolOf(t *testing.T) {
	node := func(roles ...string) *corev1.Node {
		labels := map[string]string{"kubernetes.io/hostname": "n"}
		for _, r := range roles {
			labels["node-role.kubernetes.io/"+r] = ""
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	if got, err := poolOf(node("control-plane", "infra")); err != nil || got != "master" {
		t.Errorf("roles control-plane, infra: pool %q, %v; want master", got, err)
	}
	_, err := poolOf(node("worker", "infra", "gpu"))
	if want := "node n has the roles gpu, infra: a node belongs to at most one custom pool; name its pool explicitly"; err == nil || err.Error() != want {
		t.Errorf("roles worker, infra, gpu: error %v; want %q", err, want)
	}
}

// --- drain ---

// recorder collects what Drain reports.
type recorder struct {
	mu      sync.Mutex
	evicted []string
	blocked chan []phase.Blocker
}

func newRecorder() *recorder { return &recorder{blocked: make(chan []phase.Blocker, 100)} }

func (r *recorder) onEvicted(pod string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evicted = append(r.evicted, pod)
}

func (r *recorder) onBlocked(bs []phase.Blocker) { r.blocked <- bs }

func (r *recorder) evictedPods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.evicted))
}

func (r *recorder) nextBlocked(t *testing.T) []phase.Blocker {
	t.Helper()
	select {
	case bs := <-r.blocked:
		return bs
	case <-time.After(20 * time.Second):
		t.Fatal("blocked was not called within 20s")
		return nil
	}
}

func bare(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

func TestDrain(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "drain-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.CreateNode(ctx, "drain-0", nil)
	if err != nil {
		t.Fatal(err)
	}

	// A bare pod (needs Force) with an emptyDir (needs DeleteEmptyDirData).
	p := bare(ns, "bare", node.Name, nil)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if _, err := env.RunPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A pod of a ReplicaSet (no controller runs it; the owner reference is what counts).
	p = bare(ns, "web-6d4cf56db6-x7k2p", node.Name, map[string]string{"app": "web"})
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d4cf56db6", UID: "0b2b8f1e-0000-4000-8000-000000000001", Controller: new(true)}}
	if _, err := env.RunPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A DaemonSet's pod, which stays. The helper looks its DaemonSet up, so it exists.
	labels := map[string]string{"app": "agent"}
	ds, err := env.Kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p = bare(ns, "agent-drain-0", node.Name, labels)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: new(true)}}
	if _, err := env.RunPod(ctx, p); err != nil {
		t.Fatal(err)
	}

	a := newAgent(t, node.Name, "", fast(t))
	if err := a.Cordon(ctx); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	began := time.Now()
	if err := a.Drain(ctx, rec.onBlocked, rec.onEvicted, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("drained in %s", time.Since(began).Round(time.Millisecond))

	if got, want := kubetest.PodsOn(t, env.Kube, node.Name), []string{ns + "/agent-drain-0"}; !slices.Equal(got, want) {
		t.Fatalf("pods on the node after the drain: %v, want only the DaemonSet's %v", got, want)
	}
	if got, want := rec.evictedPods(), []string{ns + "/bare", ns + "/web-6d4cf56db6-x7k2p"}; !slices.Equal(got, want) {
		t.Fatalf("evicted reported %v, want %v", got, want)
	}
	if len(rec.blocked) != 0 {
		t.Fatalf("blocked was called for a drain nothing blocked: %v", <-rec.blocked)
	}
	// Nothing left to evict: a second drain is done at once.
	if err := a.Drain(ctx, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func openBudget(t *testing.T, ns, name string) {
	t.Helper()
	pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SetBudget(t, env.Kube, pdb, 1)
}

func TestDrainBlockedByBudget(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "drain-pdb-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.CreateNode(ctx, "drain-pdb", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"guarded", "free"} {
		if _, err := env.RunPod(ctx, bare(ns, name, node.Name, map[string]string{"app": name})); err != nil {
			t.Fatal(err)
		}
	}
	kubetest.CreateBudget(t, env.Kube, ns, "guarded", 0)

	opts := fast(t)
	a := newAgent(t, node.Name, "", opts)
	rec := newRecorder()
	type try struct {
		attempt   int
		next, now time.Time
	}
	var triesMu sync.Mutex
	var tries []try
	retry := func(attempt int, next time.Time) {
		triesMu.Lock()
		defer triesMu.Unlock()
		tries = append(tries, try{attempt, next, time.Now()})
	}
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- a.Drain(ctx, rec.onBlocked, rec.onEvicted, retry) }()

	want := []phase.Blocker{{Pod: ns + "/guarded", Budgets: []string{ns + "/guarded"}}}
	if got := rec.nextBlocked(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("blocked(%+v), want %+v", got, want)
	}
	// The drain goes on: the attempt times out and the next one is blocked again.
	if got := rec.nextBlocked(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("blocked(%+v) on a later attempt, want %+v", got, want)
	}
	select {
	case err := <-done:
		t.Fatalf("Drain returned %v while a budget blocks it", err)
	default:
	}
	if got := rec.evictedPods(); !slices.Equal(got, []string{ns + "/free"}) {
		t.Fatalf("evicted %v while blocked, want the unguarded pod", got)
	}
	t.Logf("blocker message: %s", phase.DescribeBlockers(want))

	openBudget(t, ns, "guarded")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Drain did not finish within 30s of the budget opening")
	}
	if got := kubetest.PodsOn(t, env.Kube, node.Name); len(got) != 0 {
		t.Fatalf("pods left on the node: %v", got)
	}
	if got := rec.evictedPods(); !slices.Equal(got, []string{ns + "/free", ns + "/guarded"}) {
		t.Fatalf("evicted %v", got)
	}
	// Each failed attempt was announced, numbered from 1, with the next one DrainRetry
	// after it: the second blocked call above came after the first attempt failed.
	triesMu.Lock()
	defer triesMu.Unlock()
	if len(tries) == 0 {
		t.Fatal("retry was never called for a drain whose attempts failed")
	}
	for i, tr := range tries {
		if tr.attempt != i+1 || tr.next.Sub(tr.now) > opts.DrainRetry || tr.next.Before(began.Add(opts.DrainRetry)) {
			t.Errorf("retry #%d: attempt %d, next %s at %s; want attempt %d, next at most %s later", i, tr.attempt, tr.next, tr.now, i+1, opts.DrainRetry)
		}
	}
}

func TestDrainCancelled(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "drain-cancel-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.CreateNode(ctx, "drain-cancel", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.RunPod(ctx, bare(ns, "guarded", node.Name, map[string]string{"app": "guarded"})); err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBudget(t, env.Kube, ns, "guarded", 0)

	a := newAgent(t, node.Name, "", fast(t))
	drainCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := newRecorder()
	done := make(chan error, 1)
	go func() { done <- a.Drain(drainCtx, rec.onBlocked, rec.onEvicted, nil) }()
	rec.nextBlocked(t)

	cancel()
	began := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "drain-cancel") {
			t.Fatalf("Drain after cancel = %v, want context.Canceled naming the node", err)
		}
		t.Logf("Drain returned %s after cancel", time.Since(began).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return within 5s of its context's cancel")
	}
	if got := kubetest.PodsOn(t, env.Kube, node.Name); !slices.Equal(got, []string{ns + "/guarded"}) {
		t.Fatalf("pods on the node after a cancelled drain: %v", got)
	}
}

// TestEventsOfManyUpdates: three updates' worth of Events on one node (an update writes
// about a dozen, each of its own reason) all reach the API server. client-go's default
// spam filter allows 25 per object, then one every 5 minutes: the third update's would
// be lost.
func TestEventsOfManyUpdates(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.CreateBareNode(t, env.Kube, "events-1", nil, nil)
	a := newAgent(t, "events-1", "", fast(t))
	reasons := []string{"Cordon", "Drain", "Drained", "OSUpdateStarted", "OSUpdateStaged", "PendingConfig",
		"Reboot", "RebootDone", "Uncordon", "SetDesiredConfig", "UpdateComplete", "NodeDone"}
	const updates = 3
	for u := range updates {
		for _, r := range reasons {
			a.Event(corev1.EventTypeNormal, r, fmt.Sprintf("update %d: %s", u+1, r))
		}
	}
	last := fmt.Sprintf("update %d: %s", updates, reasons[len(reasons)-1])
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": "events-1"}.String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Message == last {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the last update's last Event (%q) never reached the API server: %v", last, err)
	}
}
