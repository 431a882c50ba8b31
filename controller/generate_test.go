package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

const testKubeletBase = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
maxPods: 110
`

// generateController starts a controller whose base kubelet configuration is a
// ConfigMap of the test's own namespace, and returns its KubeletBase.
func generateController(t *testing.T, lease string) controller.KubeletBase {
	t.Helper()
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "kubelet-base-")
	if err != nil {
		t.Fatal(err)
	}
	base := controller.KubeletBase{Namespace: ns, Name: "kubelet-config", Key: "kubelet", Path: "/var/lib/kubelet/config.yaml"}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: base.Name}, Data: map[string]string{base.Key: testKubeletBase},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, lease, lease+"-a", func(c *controller.Config) { c.KubeletBase = base })
	return base
}

// labelledPool creates a pool as createPool does, with the label KubeletConfigs
// select it by.
func labelledPool(t *testing.T, name string) *mcfgv1.MachineConfigPool {
	t.Helper()
	p := createPool(t, name, nil, false)
	p.Labels = map[string]string{"pools.example.com/" + name: ""}
	p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(kubetest.Context(t), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func poolSelector(pool string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"pools.example.com/" + pool: ""}}
}

func createKubeletConfig(t *testing.T, name, pool, raw string, mutate ...func(*mcfgv1.KubeletConfig)) *mcfgv1.KubeletConfig {
	t.Helper()
	kc := &mcfgv1.KubeletConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: poolSelector(pool), KubeletConfig: &runtime.RawExtension{Raw: []byte(raw)}},
	}
	for _, m := range mutate {
		m(kc)
	}
	kcs := env.MachineConfig.MachineconfigurationV1().KubeletConfigs()
	created, err := kcs.Create(kubetest.Context(t), kc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create kubeletconfig %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return created
}

func getKubeletConfig(t *testing.T, name string) *mcfgv1.KubeletConfig {
	t.Helper()
	kc, err := env.MachineConfig.MachineconfigurationV1().KubeletConfigs().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// ownedBy lists the MachineConfigs whose controller is uid.
func ownedBy(t *testing.T, uid types.UID) []string {
	t.Helper()
	list, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().List(kubetest.Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mc := range list.Items {
		if ref := metav1.GetControllerOf(&mc); ref != nil && ref.UID == uid {
			out = append(out, mc.Name)
		}
	}
	return out
}

func poolSources(p *mcfgv1.MachineConfigPool) []string {
	var out []string
	for _, s := range p.Spec.Configuration.Source {
		out = append(out, s.Name)
	}
	return out
}

// TestGenerateKubeletConfig: a KubeletConfig becomes 99-<pool>-generated-kubelet,
// owned by it and named in its finalizers, with the base merged and the file at the
// configured path; it is Accepted; the pool renders with it; a second KubeletConfig on
// the pool gets the -1 name; deleting the first deletes its MachineConfig and the pool
// renders without it.
func TestGenerateKubeletConfig(t *testing.T) {
	ctx := kubetest.Context(t)
	labelledPool(t, "kcgen")
	applyMC(t, machineConfig(t, "00-kcgen-base", "kcgen", "/etc/base", "base"))
	base := generateController(t, "lease-kcgen")
	kc := createKubeletConfig(t, "kcgen-max-pods", "kcgen", `{"maxPods":250}`)

	mcs := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	var mc *mcfgv1.MachineConfig
	kubetest.Eventually(t, 30*time.Second, "the generated MachineConfig", func() (bool, string) {
		var err error
		mc, err = mcs.Get(ctx, "99-kcgen-generated-kubelet", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if ref := metav1.GetControllerOf(mc); ref == nil || ref.Kind != "KubeletConfig" || ref.UID != kc.UID {
		t.Errorf("owner = %+v", mc.OwnerReferences)
	}
	if mc.Labels[mcfgv1.MachineConfigRoleLabelKey] != "kcgen" {
		t.Errorf("labels = %v", mc.Labels)
	}
	cfg, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Storage.Files) != 1 || cfg.Storage.Files[0].Path != base.Path {
		t.Fatalf("files = %+v", cfg.Storage.Files)
	}
	data, err := ignconfig.Contents(cfg.Storage.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(data); !strings.Contains(s, "maxPods: 250") || !strings.Contains(s, "clusterDomain: cluster.local") {
		t.Errorf("kubelet configuration = %s", s)
	}
	kubetest.Eventually(t, 30*time.Second, "Accepted True", func() (bool, string) {
		k := getKubeletConfig(t, kc.Name)
		c, ok, _ := generated.LastKubelet(k.Status.Conditions)
		return ok && k.Status.ObservedGeneration == k.Generation && slices.Contains(k.Finalizers, mc.Name), fmt.Sprintf("%+v finalizers %v", c, k.Finalizers)
	})
	k := getKubeletConfig(t, kc.Name)
	if n := len(k.Status.Conditions); n != 2 || k.Status.Conditions[0].Type != generated.KubeletConfigAccepted || k.Status.Conditions[1].Type != mcfgv1.KubeletConfigSuccess {
		t.Errorf("conditions = %+v, want Accepted then Success", k.Status.Conditions)
	}
	kubetest.Eventually(t, 30*time.Second, "the pool renders with it", func() (bool, string) {
		s := poolSources(getPool(t, "kcgen"))
		return slices.Equal(s, []string{"00-kcgen-base", "99-kcgen-generated-kubelet"}), fmt.Sprint(s)
	})

	// A second one on the pool: MCO's -1.
	second := createKubeletConfig(t, "kcgen-log", "kcgen", `{}`, func(k *mcfgv1.KubeletConfig) { k.Spec.LogLevel = ptr.To[int32](4) })
	kubetest.Eventually(t, 30*time.Second, "the second generated MachineConfig", func() (bool, string) {
		got := ownedBy(t, second.UID)
		return slices.Equal(got, []string{"99-kcgen-generated-kubelet-1"}), fmt.Sprint(got)
	})

	// Deleting the first: its MachineConfig goes (the finalizer does it: no garbage
	// collector runs here), the pool renders without it.
	if err := env.MachineConfig.MachineconfigurationV1().KubeletConfigs().Delete(ctx, kc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the KubeletConfig and its MachineConfig gone", func() (bool, string) {
		_, kerr := env.MachineConfig.MachineconfigurationV1().KubeletConfigs().Get(ctx, kc.Name, metav1.GetOptions{})
		_, merr := mcs.Get(ctx, "99-kcgen-generated-kubelet", metav1.GetOptions{})
		return apierrors.IsNotFound(kerr) && apierrors.IsNotFound(merr), fmt.Sprintf("kubeletconfig: %v, machineconfig: %v", kerr, merr)
	})
	kubetest.Eventually(t, 30*time.Second, "the pool renders without it", func() (bool, string) {
		s := poolSources(getPool(t, "kcgen"))
		return slices.Equal(s, []string{"00-kcgen-base", "99-kcgen-generated-kubelet-1"}), fmt.Sprint(s)
	})
}

// TestGenerateKubeletRefusals: each field MCO refuses gives Accepted False with a
// message that names it, and nothing is generated; so does a missing base.
func TestGenerateKubeletRefusals(t *testing.T) {
	labelledPool(t, "kcbad")
	master := labelledPool(t, "kcbadmaster")
	master.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(kubetest.Context(t), master, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	generateController(t, "lease-kcbad")
	tests := []struct{ name, pool, raw, field string }{
		{"cgroupdriver", "kcbad", `{"cgroupDriver":"cgroupfs"}`, "cgroupDriver"},
		{"clusterdns", "kcbad", `{"clusterDNS":["1.1.1.1"]}`, "clusterDNS"},
		{"clusterdomain", "kcbad", `{"clusterDomain":"x.local"}`, "clusterDomain"},
		{"featuregates", "kcbad", `{"featureGates":{"A":true}}`, "featureGates"},
		{"failswapon", "kcbad", `{"failSwapOn":false}`, "failSwapOn"},
		{"swapbehavior", "kcbad", `{"memorySwap":{"swapBehavior":"LimitedSwap"}}`, "swapBehavior"},
		{"staticpodpath", "kcbadmaster", `{"staticPodPath":"/x"}`, "staticPodPath"},
		{"unknown", "kcbad", `{"maxPod":1}`, "maxPod"},
	}
	var kcs []*mcfgv1.KubeletConfig
	for _, tt := range tests {
		kcs = append(kcs, createKubeletConfig(t, "kcbad-"+tt.name, tt.pool, tt.raw))
	}
	nopool := createKubeletConfig(t, "kcbad-nopool", "nosuchpool", `{"maxPods":1}`)
	for i, tt := range tests {
		kubetest.Eventually(t, 30*time.Second, tt.name+": Accepted False naming "+tt.field, func() (bool, string) {
			k := getKubeletConfig(t, kcs[i].Name)
			c, accepted, ok := generated.LastKubelet(k.Status.Conditions)
			return ok && !accepted && c.Status == corev1.ConditionFalse && c.Reason == generated.ReasonInvalid && strings.Contains(c.Message, tt.field), fmt.Sprintf("%+v", k.Status.Conditions)
		})
	}
	kubetest.Eventually(t, 30*time.Second, "no pool: Accepted False", func() (bool, string) {
		c, accepted, ok := generated.LastKubelet(getKubeletConfig(t, nopool.Name).Status.Conditions)
		return ok && !accepted && strings.Contains(c.Message, "does not match any MachineConfigPools"), fmt.Sprintf("%+v", c)
	})
	for _, kc := range append(kcs, nopool) {
		if got := ownedBy(t, kc.UID); len(got) != 0 {
			t.Errorf("%s generated %v", kc.Name, got)
		}
	}
	for _, p := range []string{"kcbad", "kcbadmaster"} {
		if s := poolSources(getPool(t, p)); slices.ContainsFunc(s, func(n string) bool { return strings.Contains(n, "generated") }) {
			t.Errorf("pool %s renders %v", p, s)
		}
	}
}

// TestGenerateKubeletNoBase: without the base ConfigMap, Accepted False says which
// ConfigMap and how to name another; nothing is generated.
func TestGenerateKubeletNoBase(t *testing.T) {
	labelledPool(t, "kcnobase")
	startController(t, "lease-kcnobase", "kcnobase-a", func(c *controller.Config) {
		c.KubeletBase = controller.KubeletBase{Namespace: "default", Name: "no-such-kubelet-config"}
	})
	kc := createKubeletConfig(t, "kcnobase", "kcnobase", `{"maxPods":1}`)
	kubetest.Eventually(t, 30*time.Second, "Accepted False naming the ConfigMap", func() (bool, string) {
		c, accepted, ok := generated.LastKubelet(getKubeletConfig(t, kc.Name).Status.Conditions)
		return ok && !accepted && c.Reason == generated.ReasonBase && strings.Contains(c.Message, "default/no-such-kubelet-config") &&
			strings.Contains(c.Message, "--kubelet-base-configmap"), fmt.Sprintf("%+v", c)
	})
	if got := ownedBy(t, kc.UID); len(got) != 0 {
		t.Errorf("generated %v", got)
	}
}

func createCRC(t *testing.T, name, pool string, r mcfgv1.ContainerRuntimeConfiguration) *mcfgv1.ContainerRuntimeConfig {
	t.Helper()
	c := &mcfgv1.ContainerRuntimeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       mcfgv1.ContainerRuntimeConfigSpec{MachineConfigPoolSelector: poolSelector(pool), ContainerRuntimeConfig: &r},
	}
	client := env.MachineConfig.MachineconfigurationV1().ContainerRuntimeConfigs()
	created, err := client.Create(kubetest.Context(t), c, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create containerruntimeconfig %s: %v", name, err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return created
}

func setRuntime(t *testing.T, node, version string) {
	t.Helper()
	ctx := kubetest.Context(t)
	n := getNode(t, node)
	n.Status.NodeInfo.ContainerRuntimeVersion = version
	if _, err := env.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestGenerateContainerRuntime: on a pool of CRI-O nodes a ContainerRuntimeConfig
// becomes 99-<pool>-generated-containerruntime with the drop-ins; on a pool with a
// containerd node it fails naming the node and its runtime, and nothing is generated;
// an invalid one fails with MCO's message.
func TestGenerateContainerRuntime(t *testing.T) {
	ctx := kubetest.Context(t)
	labelledPool(t, "crio")
	labelledPool(t, "ctrd")
	crioNodes := createNodes(t, "crio", "", "")
	ctrdNodes := createNodes(t, "ctrd", "", "")
	setRuntime(t, crioNodes[0], "cri-o://1.33.2")
	setRuntime(t, ctrdNodes[0], "containerd://2.1.3")
	generateController(t, "lease-crc")

	good := createCRC(t, "crio-pids", "crio", mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048), LogLevel: "debug"})
	refused := createCRC(t, "ctrd-pids", "ctrd", mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048)})
	invalid := createCRC(t, "crio-bad", "ctrd", mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](5)})

	mcs := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	var mc *mcfgv1.MachineConfig
	kubetest.Eventually(t, 30*time.Second, "the generated MachineConfig", func() (bool, string) {
		var err error
		mc, err = mcs.Get(ctx, "99-crio-generated-containerruntime", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if ref := metav1.GetControllerOf(mc); ref == nil || ref.UID != good.UID {
		t.Errorf("owner = %+v", mc.OwnerReferences)
	}
	cfg, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range cfg.Storage.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{generated.CRIODropInLogLevelPath, generated.CRIODropInPidsLimitPath}) {
		t.Errorf("files = %v", paths)
	}
	get := func(name string) *mcfgv1.ContainerRuntimeConfig {
		c, err := env.MachineConfig.MachineconfigurationV1().ContainerRuntimeConfigs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	kubetest.Eventually(t, 30*time.Second, "Success", func() (bool, string) {
		c, ok, _ := generated.LastContainerRuntime(get(good.Name).Status.Conditions)
		return ok, fmt.Sprintf("%+v", c)
	})
	kubetest.Eventually(t, 30*time.Second, "containerd pool: Failure naming the node", func() (bool, string) {
		c, ok, has := generated.LastContainerRuntime(get(refused.Name).Status.Conditions)
		return has && !ok && c.Type == mcfgv1.ContainerRuntimeConfigFailure && c.Reason == generated.ReasonRuntime &&
			strings.Contains(c.Message, ctrdNodes[0]+" (containerd://2.1.3)"), fmt.Sprintf("%+v", c)
	})
	kubetest.Eventually(t, 30*time.Second, "invalid: Failure with MCO's message", func() (bool, string) {
		c, ok, has := generated.LastContainerRuntime(get(invalid.Name).Status.Conditions)
		return has && !ok && c.Message == "Error: invalid PidsLimit 5", fmt.Sprintf("%+v", c)
	})
	for _, c := range []*mcfgv1.ContainerRuntimeConfig{refused, invalid} {
		if got := ownedBy(t, c.UID); len(got) != 0 {
			t.Errorf("%s generated %v", c.Name, got)
		}
	}
}
