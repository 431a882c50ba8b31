package kubetest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// cleanup deletes what a test created, so that -count=N runs it again in the same
// control plane. It runs after t.Context() is done, hence a context of its own.
func cleanup(t *testing.T, what string, del func(context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", what, err)
		}
	})
}

func TestServerIsTheBuiltVersion(t *testing.T) {
	v, err := env.Kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if v.GitVersion != kubetest.KubeVersion {
		t.Fatalf("kube-apiserver reports %s, want %s: rebuild with `make testbin`", v.GitVersion, kubetest.KubeVersion)
	}
}

func TestKubectlReachesTheControlPlane(t *testing.T) {
	out, err := env.KubectlCommand(kubetest.Context(t), "get", "crd", "machineconfignodes.machineconfiguration.openshift.io", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get crd: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "customresourcedefinition.apiextensions.k8s.io/machineconfignodes.machineconfiguration.openshift.io" {
		t.Fatalf("kubectl get crd printed %q", got)
	}
}

// TestBootImageResourcesServed writes the boot image objects through the typed clients
// that the code under test uses: the operator/v1 and machine/v1beta1 CRDs are served
// and agree with the clients on group, version and resource.
func TestBootImageResourcesServed(t *testing.T) {
	ctx := kubetest.Context(t)
	mc := &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{
				OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed},
			},
			ManagedBootImages: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{{
				Resource:  operatorv1.MachineSets,
				APIGroup:  operatorv1.MachineAPI,
				Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All},
			}}},
		},
	}
	// The Go type always sends spec.nodeDisruptionPolicy.sshkey (a struct field without
	// omitzero), and the schema requires actions in it: a MachineConfiguration built
	// from zero values is refused. Whoever creates one must say what an SSH key change does.
	_, err := env.Operator.OperatorV1().MachineConfigurations().Create(ctx, mc, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.nodeDisruptionPolicy.sshkey.actions")
	mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
	if _, err := env.Operator.OperatorV1().MachineConfigurations().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MachineConfiguration cluster: %v", err)
	}
	cleanup(t, "MachineConfiguration cluster", func(ctx context.Context) error {
		return env.Operator.OperatorV1().MachineConfigurations().Delete(ctx, "cluster", metav1.DeleteOptions{})
	})

	ns, err := env.CreateNamespace(ctx, "machinesets-")
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"machine.openshift.io/cluster-api-machineset": "worker-a"}
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-a"},
		Spec: machinev1beta1.MachineSetSpec{
			Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: labels}},
		},
	}
	if _, err := env.Machine.MachineV1beta1().MachineSets(ns).Create(ctx, ms, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MachineSet %s/worker-a: %v", ns, err)
	}
}

func validMCN(name string) *mcfgv1.MachineConfigNode {
	return &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: name},
			Pool:          mcfgv1.MCOObjectReference{Name: "worker"},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-0123456789abcdef"},
		},
	}
}

// rawMCN is a MachineConfigNode as a plain object, to send what typed clients cannot.
func rawMCN(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfigNode",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

func TestMachineConfigNodeSchema(t *testing.T) {
	ctx := kubetest.Context(t)
	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcnResource := env.Dynamic.Resource(mcfgv1.GroupVersion.WithResource("machineconfignodes"))

	t.Run("valid is accepted", func(t *testing.T) {
		if _, err := mcns.Create(ctx, validMCN("mcn-valid"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create a valid MachineConfigNode: %v", err)
		}
		cleanup(t, "MachineConfigNode mcn-valid", func(ctx context.Context) error {
			return mcns.Delete(ctx, "mcn-valid", metav1.DeleteOptions{})
		})
	})
	t.Run("missing required spec.pool", func(t *testing.T) {
		// The typed client always sends pool (its name has no omitempty); a raw object
		// can leave it out.
		_, err := mcnResource.Create(ctx, rawMCN("mcn-no-pool", map[string]any{
			"node":          map[string]any{"name": "mcn-no-pool"},
			"configVersion": map[string]any{"desired": "rendered-worker-1"},
		}), metav1.CreateOptions{})
		requireInvalid(t, err, "spec.pool")
	})
	t.Run("empty pool name", func(t *testing.T) {
		mcn := validMCN("mcn-empty-pool")
		mcn.Spec.Pool = mcfgv1.MCOObjectReference{}
		_, err := mcns.Create(ctx, mcn, metav1.CreateOptions{})
		requireInvalid(t, err, "spec.pool.name")
	})
	t.Run("desired config is not a DNS subdomain", func(t *testing.T) {
		mcn := validMCN("mcn-bad-desired")
		mcn.Spec.ConfigVersion.Desired = "Rendered_Worker"
		_, err := mcns.Create(ctx, mcn, metav1.CreateOptions{})
		requireInvalid(t, err, "spec.configVersion.desired")
	})
	t.Run("spec.node.name differs from the object's name", func(t *testing.T) {
		mcn := validMCN("mcn-other-node")
		mcn.Spec.Node.Name = "some-other-node"
		_, err := mcns.Create(ctx, mcn, metav1.CreateOptions{})
		requireInvalid(t, err, "")
		if !strings.Contains(err.Error(), "spec.node.name should match metadata.name") {
			t.Fatalf("error does not carry the CRD's CEL message: %v", err)
		}
	})
	t.Run("wrong type for spec.node.name", func(t *testing.T) {
		// Typed clients cannot send a number where a string belongs; a raw object can.
		_, err := mcnResource.Create(ctx, rawMCN("mcn-wrong-type", map[string]any{
			"node":          map[string]any{"name": int64(42)},
			"pool":          map[string]any{"name": "worker"},
			"configVersion": map[string]any{"desired": "rendered-worker-1"},
		}), metav1.CreateOptions{})
		requireInvalid(t, err, "spec.node.name")
	})
}

func TestMachineConfigPoolSchema(t *testing.T) {
	ctx := kubetest.Context(t)
	pools := env.Dynamic.Resource(mcfgv1.GroupVersion.WithResource("machineconfigpools"))
	pool := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1",
			"kind":       "MachineConfigPool",
			"metadata":   map[string]any{"name": name},
			"spec":       spec,
		}}
	}

	t.Run("valid is accepted", func(t *testing.T) {
		for name, maxUnavailable := range map[string]intstr.IntOrString{
			"mcp-int":     intstr.FromInt32(2),
			"mcp-percent": intstr.FromString("25%"),
		} {
			mcp := &mcfgv1.MachineConfigPool{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: mcfgv1.MachineConfigPoolSpec{
					MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
					NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
					MaxUnavailable:        &maxUnavailable,
				},
			}
			if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, mcp, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create pool %s with maxUnavailable %s: %v", name, maxUnavailable.String(), err)
			}
			cleanup(t, "MachineConfigPool "+name, func(ctx context.Context) error {
				return env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
	})
	t.Run("maxUnavailable is neither integer nor string", func(t *testing.T) {
		_, err := pools.Create(ctx, pool("mcp-bool", map[string]any{"maxUnavailable": true}), metav1.CreateOptions{})
		requireInvalid(t, err, "spec.maxUnavailable")
	})
	t.Run("paused is not a boolean", func(t *testing.T) {
		_, err := pools.Create(ctx, pool("mcp-paused", map[string]any{"paused": "yes"}), metav1.CreateOptions{})
		requireInvalid(t, err, "spec.paused")
	})
}

// requireInvalid fails the test unless err is a 422 Invalid whose causes name field (the
// object as a whole when field is empty).
func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the apiserver accepted an object that breaks the CRD schema at %q", field)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Code != http.StatusUnprocessableEntity {
		t.Fatalf("want 422 Invalid, got %T: %v", err, err)
	}
	if field == "" {
		return
	}
	var fields []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			fields = append(fields, c.Field)
		}
	}
	if !slices.Contains(fields, field) {
		t.Fatalf("422 Invalid names fields %q, want %q: %v", fields, field, err)
	}
}

func TestEvictionOnKwokNode(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "eviction-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.CreateNode(ctx, "kwok-eviction", map[string]string{"node-role.kubernetes.io/worker": ""})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, "node kwok-eviction", func(ctx context.Context) error {
		return env.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{})
	})
	pod := func(name, app string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node.Name},
		}
	}
	evict := func(name string) error {
		return env.Kube.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		})
	}

	t.Run("without a budget the pod goes away", func(t *testing.T) {
		p, err := env.RunPod(ctx, pod("free", "free"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.PodIP == "" {
			t.Errorf("kwok ran pod %s without a pod IP", p.Name)
		}
		if err := evict(p.Name); err != nil {
			t.Fatalf("evict pod %s: %v", p.Name, err)
		}
		if err := env.WaitForPodDeleted(ctx, ns, p.Name); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a closed budget refuses with 429, an open one lets it go", func(t *testing.T) {
		p, err := env.RunPod(ctx, pod("guarded", "guarded"))
		if err != nil {
			t.Fatal(err)
		}
		minAvailable := intstr.FromInt32(1)
		pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &minAvailable,
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create PodDisruptionBudget guarded: %v", err)
		}
		// What kube-controller-manager's disruption controller would write for one
		// healthy pod that must stay: no disruption allowed. ObservedGeneration must
		// catch up, or the apiserver refuses because the budget is "still being processed".
		pdb.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: pdb.Generation,
			DisruptionsAllowed: 0,
			CurrentHealthy:     1,
			DesiredHealthy:     1,
			ExpectedPods:       1,
		}
		if pdb, err = env.Kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("close PodDisruptionBudget guarded: %v", err)
		}

		err = evict(p.Name)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evict pod %s under a closed budget: want 429 TooManyRequests, got %v", p.Name, err)
		}
		if !strings.Contains(err.Error(), "disruption budget") || !hasCause(err, "The disruption budget guarded needs 1 healthy pods and has 1 currently") {
			t.Fatalf("the 429 does not say which budget blocks: %v", err)
		}
		if got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("pod %s after a refused eviction: err=%v deletionTimestamp=%v", p.Name, err, got.GetDeletionTimestamp())
		}

		pdb.Status.DisruptionsAllowed = 1
		pdb.Status.CurrentHealthy = 2
		if _, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("open PodDisruptionBudget guarded: %v", err)
		}
		if err := evict(p.Name); err != nil {
			t.Fatalf("evict pod %s under an open budget: %v", p.Name, err)
		}
		if err := env.WaitForPodDeleted(ctx, ns, p.Name); err != nil {
			t.Fatal(err)
		}
	})
}

func hasCause(err error, message string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause && c.Message == message {
			return true
		}
	}
	return false
}

// TestBoundToNodeCarriesTheNodeName: a token bound to a pod on a node names that node
// (the claim node-scoped admission policies key on) and authenticates as the service
// account.
func TestBoundToNodeCarriesTheNodeName(t *testing.T) {
	ctx := kubetest.Context(t)
	name := "bound-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:20]
	kubetest.CreateBareNode(t, env.Kube, name, nil, nil)
	cleanup(t, "node "+name, func(ctx context.Context) error {
		return env.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	})
	ns, err := env.CreateNamespace(ctx, "bound-")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := env.BoundToNode(ctx, ns, "agent", name)
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":agent"; creds.User.Username != want {
		t.Errorf("user %q, want %q", creds.User.Username, want)
	}
	if got := creds.User.Extra["authentication.kubernetes.io/pod-name"]; !slices.Equal(got, []string{creds.Pod.Name}) {
		t.Errorf("pod-name claim %v, want [%s]", got, creds.Pod.Name)
	}
}

// TestDefaultCRDsOf2026 checks that the control plane serves OpenShift's Default CRDs of
// 2026, whose schema carries what mcotui reads: the image mode objects with their CEL
// rules, the OSImageStream singleton and a pool's stream, and control-plane boot images
// in MachineConfiguration (All or None only).
func TestDefaultCRDsOf2026(t *testing.T) {
	ctx := kubetest.Context(t)
	mcfg := env.MachineConfig.MachineconfigurationV1()

	t.Run("MachineOSConfig named after its pool", func(t *testing.T) {
		mosc := &mcfgv1.MachineOSConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "layered"},
			Spec: mcfgv1.MachineOSConfigSpec{
				MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: "other"},
				ImageBuilder:            mcfgv1.MachineOSImageBuilder{ImageBuilderType: mcfgv1.JobBuilder},
				RenderedImagePushSecret: mcfgv1.ImageSecretObjectReference{Name: "push"},
				RenderedImagePushSpec:   "registry.example.com/ocl/os-image:latest",
				Containerfile:           []mcfgv1.MachineOSContainerfile{{ContainerfileArch: mcfgv1.NoArch, Content: "FROM configs AS final\n"}},
			},
		}
		_, err := mcfg.MachineOSConfigs().Create(ctx, mosc, metav1.CreateOptions{})
		requireInvalid(t, err, "")
		if !strings.Contains(err.Error(), "MachineOSConfig name must match the referenced MachineConfigPool name") {
			t.Fatalf("error does not carry the CRD's CEL message: %v", err)
		}
		mosc.Spec.MachineConfigPool.Name = "layered"
		if _, err := mcfg.MachineOSConfigs().Create(ctx, mosc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create MachineOSConfig layered: %v", err)
		}
		cleanup(t, "MachineOSConfig layered", func(ctx context.Context) error {
			return mcfg.MachineOSConfigs().Delete(ctx, "layered", metav1.DeleteOptions{})
		})
	})

	t.Run("MachineOSBuild served", func(t *testing.T) {
		mosb := &mcfgv1.MachineOSBuild{
			ObjectMeta: metav1.ObjectMeta{Name: "layered-build-1"},
			Spec: mcfgv1.MachineOSBuildSpec{
				MachineConfig:         mcfgv1.MachineConfigReference{Name: "rendered-layered-1"},
				MachineOSConfig:       mcfgv1.MachineOSConfigReference{Name: "layered"},
				RenderedImagePushSpec: "registry.example.com/ocl/os-image:layered-build-1",
			},
		}
		if _, err := mcfg.MachineOSBuilds().Create(ctx, mosb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create MachineOSBuild: %v", err)
		}
		cleanup(t, "MachineOSBuild layered-build-1", func(ctx context.Context) error {
			return mcfg.MachineOSBuilds().Delete(ctx, "layered-build-1", metav1.DeleteOptions{})
		})
	})

	t.Run("OSImageStream and a pool's stream", func(t *testing.T) {
		const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		stream, err := mcfg.OSImageStreams().Create(ctx, &mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: mcfgv1.OSImageStreamSpec{DefaultStream: "rhel-10"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create OSImageStream cluster: %v", err)
		}
		cleanup(t, "OSImageStream cluster", func(ctx context.Context) error {
			return mcfg.OSImageStreams().Delete(ctx, "cluster", metav1.DeleteOptions{})
		})
		stream.Status = mcfgv1.OSImageStreamStatus{
			DefaultStream: "rhel-10",
			AvailableStreams: []mcfgv1.OSImageStreamSet{
				{Name: "rhel-9", OSImage: "quay.example.com/os/rhel-coreos" + digest, OSExtensionsImage: "quay.example.com/os/rhel-coreos-extensions" + digest},
				{Name: "rhel-10", OSImage: "quay.example.com/os/rhel-coreos-10" + digest, OSExtensionsImage: "quay.example.com/os/rhel-coreos-10-extensions" + digest},
			},
		}
		stream, err = mcfg.OSImageStreams().UpdateStatus(ctx, stream, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("write OSImageStream status: %v", err)
		}
		if len(stream.Status.AvailableStreams) != 2 || stream.Status.DefaultStream != "rhel-10" {
			t.Fatalf("the API server kept status %+v", stream.Status)
		}
		_, err = mcfg.OSImageStreams().Create(ctx, &mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Spec: mcfgv1.OSImageStreamSpec{DefaultStream: "rhel-10"}}, metav1.CreateOptions{})
		requireInvalid(t, err, "")

		pool := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "mcp-stream"},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/stream": ""}},
				OSImageStream:         mcfgv1.OSImageStreamReference{Name: "rhel-9"},
			},
		}
		got, err := mcfg.MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pool with a stream: %v", err)
		}
		cleanup(t, "MachineConfigPool mcp-stream", func(ctx context.Context) error {
			return mcfg.MachineConfigPools().Delete(ctx, "mcp-stream", metav1.DeleteOptions{})
		})
		if got.Spec.OSImageStream.Name != "rhel-9" {
			t.Fatalf("the API server dropped spec.osImageStream: %+v", got.Spec.OSImageStream)
		}
	})

	t.Run("control-plane boot images All or None", func(t *testing.T) {
		// A dry run: MachineConfiguration cluster is shared with other tests.
		mc := &operatorv1.MachineConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: operatorv1.MachineConfigurationSpec{
				StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
				NodeDisruptionPolicy:  operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
				ManagedBootImages: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{{
					Resource: operatorv1.ControlPlaneMachineSets,
					APIGroup: operatorv1.MachineAPI,
					Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.Partial, Partial: &operatorv1.PartialSelector{
						MachineResourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}},
				}}},
			},
		}
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		mc.Name = "dry-run-cpms"
		_, err := env.Operator.OperatorV1().MachineConfigurations().Create(ctx, mc, dry)
		requireInvalid(t, err, "")
		if !strings.Contains(err.Error(), "Only All or None selection mode is permitted for ControlPlaneMachineSets") {
			t.Fatalf("error does not carry the CRD's CEL message: %v", err)
		}
		mc.Spec.ManagedBootImages.MachineManagers[0].Selection = operatorv1.MachineManagerSelector{Mode: operatorv1.All}
		got, err := env.Operator.OperatorV1().MachineConfigurations().Create(ctx, mc, dry)
		if err != nil {
			t.Fatalf("dry-run create with controlplanemachinesets All: %v", err)
		}
		if m := got.Spec.ManagedBootImages.MachineManagers; len(m) != 1 || m[0].Resource != operatorv1.ControlPlaneMachineSets {
			t.Fatalf("the API server kept machine managers %+v", m)
		}
	})
}

// TestNodeKubeconfigIsAKubelet: a node's credentials authenticate as system:node:<name>
// in system:nodes, and the Node authorizer and NodeRestriction hold them to that node:
// its own Node may be changed, another's not.
func TestNodeKubeconfigIsAKubelet(t *testing.T) {
	ctx := kubetest.Context(t)
	own, other := "kubelet-own", "kubelet-other"
	for _, name := range []string{own, other} {
		kubetest.CreateBareNode(t, env.Kube, name, nil, nil)
		cleanup(t, "node "+name, func(ctx context.Context) error {
			return env.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
	b, err := env.NodeKubeconfig(own)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:node:"+own || !slices.Contains(u.Groups, kubetest.NodesGroup) {
		t.Errorf("the node's credentials are user %q in %v", u.Username, u.Groups)
	}
	patch := []byte(`{"metadata":{"labels":{"example.com/touched":"yes"}}}`)
	if _, err := kc.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("the kubelet of %s patching its own Node: %v", own, err)
	}
	if _, err := kc.CoreV1().Nodes().Patch(ctx, other, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the kubelet of %s patching node %s: %v, want Forbidden (NodeRestriction)", own, other, err)
	}
}
