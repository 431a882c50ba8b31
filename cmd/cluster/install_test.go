package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
)

// TestInstallCRDsMatchModule: deploy/crds holds exactly the files SOURCES names, each
// byte for byte as in the github.com/openshift/api module the build uses. When it fails
// after a module upgrade, run `go generate ./deploy`.
func TestInstallCRDsMatchModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("find github.com/openshift/api: %v", err)
	}
	root := strings.TrimSpace(string(out))
	f, err := os.Open("deploy/crds/SOURCES")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want = append(want, filepath.Base(line))
		mod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(line)))
		if err != nil {
			t.Fatalf("the module has no %s: %v (run `go generate ./deploy`)", line, err)
		}
		ours, err := os.ReadFile(filepath.Join("deploy/crds", filepath.Base(line)))
		if err != nil {
			t.Fatalf("%v (run `go generate ./deploy`)", err)
		}
		if !bytes.Equal(mod, ours) {
			t.Errorf("deploy/crds/%s differs from %s in the module: run `go generate ./deploy`", filepath.Base(line), line)
		}
	}
	have, err := filepath.Glob("deploy/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range have {
		have[i] = filepath.Base(have[i])
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("deploy/crds holds %v, SOURCES names %v: run `go generate ./deploy`", have, want)
	}
}

// installDocs runs install and decodes every YAML document of its output.
func installDocs(t *testing.T, args ...string) (string, []*unstructured.Unstructured) {
	t.Helper()
	code, out, errOut := mcotui.Cmd(t, append([]string{"install"}, args...)...)
	if code != 0 {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	var docs []*unstructured.Unstructured
	for {
		raw, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := utilyaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, raw)
		}
		if len(u.Object) == 0 {
			continue
		}
		docs = append(docs, &u)
	}
	return out, docs
}

// TestInstallOutput: every document is an object with a kind and a name; the CRDs come
// first; the images, namespace and RBAC are as asked.
func TestInstallOutput(t *testing.T) {
	_, docs := installDocs(t, "--namespace", "nc", "--image", "registry.example.com/mcotui:v9", "--boot-images")
	var kinds []string
	for _, d := range docs {
		if d.GetKind() == "" || d.GetName() == "" {
			t.Fatalf("document without kind or name: %v", d.Object)
		}
		kinds = append(kinds, d.GetKind()+"/"+d.GetNamespace()+"/"+d.GetName())
	}
	want := []string{
		"CustomResourceDefinition//containerruntimeconfigs.machineconfiguration.openshift.io",
		"CustomResourceDefinition//kubeletconfigs.machineconfiguration.openshift.io",
		"CustomResourceDefinition//machineconfignodes.machineconfiguration.openshift.io",
		"CustomResourceDefinition//machineconfigpools.machineconfiguration.openshift.io",
		"CustomResourceDefinition//machineconfigs.machineconfiguration.openshift.io",
		"CustomResourceDefinition//machineconfigurations.operator.openshift.io",
		"CustomResourceDefinition//machineosbuilds.machineconfiguration.openshift.io",
		"CustomResourceDefinition//machineosconfigs.machineconfiguration.openshift.io",
		"CustomResourceDefinition//osimagestreams.machineconfiguration.openshift.io",
		"CustomResourceDefinition//pinnedimagesets.machineconfiguration.openshift.io",
		"Namespace//nc",
		"ServiceAccount/nc/mcotui-agent",
		"ServiceAccount/nc/mcotui-controller",
		"ClusterRole//mcotui-agent",
		"ClusterRoleBinding//mcotui-agent",
		"ClusterRole//mcotui-controller",
		"ClusterRoleBinding//mcotui-controller",
		"ClusterRole//mcotui-controller-hooks",
		"Role/nc/mcotui-controller",
		"RoleBinding/nc/mcotui-controller",
		"Role/kube-system/mcotui-controller-kubelet-base",
		"RoleBinding/kube-system/mcotui-controller-kubelet-base",
		"Role/openshift-machine-api/mcotui-controller-bootimages",
		"RoleBinding/openshift-machine-api/mcotui-controller-bootimages",
		"ClusterRole//mcotui-controller-capi-bootimages",
		"ClusterRoleBinding//mcotui-controller-capi-bootimages",
		"ValidatingAdmissionPolicy//mcotui-agent-node",
		"ValidatingAdmissionPolicyBinding//mcotui-agent-node",
		"ValidatingAdmissionPolicy//mcotui-agent-machineconfignode",
		"ValidatingAdmissionPolicyBinding//mcotui-agent-machineconfignode",
		"ValidatingAdmissionPolicy//mcotui-agent-eviction",
		"ValidatingAdmissionPolicyBinding//mcotui-agent-eviction",
		"ValidatingAdmissionPolicy//mcotui-agent-events",
		"ValidatingAdmissionPolicyBinding//mcotui-agent-events",
		"ValidatingAdmissionPolicy//mcotui-controller-machineconfigs",
		"ValidatingAdmissionPolicyBinding//mcotui-controller-machineconfigs",
		"DaemonSet/nc/mcotui-agent",
		"Deployment/nc/mcotui-controller",
		"Service/nc/mcotui-controller-metrics",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("objects:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	for _, d := range docs {
		if d.GetKind() != "DaemonSet" && d.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 || containers[0].(map[string]any)["image"] != "registry.example.com/mcotui:v9" {
			t.Errorf("%s containers: %v", d.GetKind(), containers)
		}
	}
	_, docs = installDocs(t)
	for _, d := range docs {
		if d.GetNamespace() == bootimage.MachineAPINamespace || strings.Contains(d.GetName(), "bootimages") {
			t.Errorf("without --boot-images: %s %s in %s", d.GetKind(), d.GetName(), d.GetNamespace())
		}
		if strings.HasPrefix(d.GetAPIVersion(), "monitoring.coreos.com/") {
			t.Errorf("without --monitoring: %s %s", d.GetKind(), d.GetName())
		}
	}
	_, docs = installDocs(t, "--namespace", "nc", "--monitoring")
	var tail []string
	for _, d := range docs[len(docs)-2:] {
		tail = append(tail, d.GetAPIVersion()+" "+d.GetKind()+"/"+d.GetNamespace()+"/"+d.GetName())
	}
	if want := []string{"monitoring.coreos.com/v1 ServiceMonitor/nc/mcotui-controller", "monitoring.coreos.com/v1 PrometheusRule/nc/mcotui-controller"}; !slices.Equal(tail, want) {
		t.Errorf("--monitoring ends with %q, want %q", tail, want)
	}
	if code, _, errOut := mcotui.Cmd(t, "install", "--namespace", "Not_A_Name"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `--namespace "Not_A_Name"`) {
		t.Errorf("bad namespace: exit %d: %s", code, errOut)
	}
}

// TestInstallAppliesDryRun feeds the output to a real `kubectl apply --dry-run=server`.
func TestInstallAppliesDryRun(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	// A server-side dry run creates nothing, so namespaced objects need their
	// namespaces to exist already.
	for _, ns := range []string{"mcotui-dry", bootimage.MachineAPINamespace} {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	installMonitoringCRDs(t, env)
	out, docs := installDocs(t, "--namespace", "mcotui-dry", "--boot-images", "--monitoring", "--config-server", "--config-server-name", "config.example.com", "--config-server-name", "192.0.2.10")
	cmd := env.KubectlCommand(ctx, "apply", "--dry-run=server", "-f", "-")
	cmd.Stdin = strings.NewReader(out)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, res)
	}
	if lines := strings.Count(string(res), "(server dry run)\n"); lines != len(docs) {
		t.Errorf("kubectl applied %d objects, install printed %d:\n%s", lines, len(docs), res)
	}
}

// installMonitoringCRDs installs the Prometheus Operator's ServiceMonitor and
// PrometheusRule CRDs (testdata/monitoring-crds, from its module) and waits until they
// are served, so that a dry run of --monitoring's objects is validated by their schemas.
func installMonitoringCRDs(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	dir := filepath.Join("testdata", "monitoring-crds")
	// Server-side: the ServiceMonitor CRD is too large for client-side apply's
	// last-applied annotation in some versions, and the server's view is what counts.
	apply := env.KubectlCommand(ctx, "apply", "--server-side", "--force-conflicts", "-f", dir)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("install the monitoring CRDs: %v\n%s", err, out)
	}
	wait := env.KubectlCommand(ctx, "wait", "--for", "condition=Established", "--timeout", "60s",
		"crd/prometheusrules.monitoring.coreos.com", "crd/servicemonitors.monitoring.coreos.com")
	if out, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("the monitoring CRDs are not established: %v\n%s", err, out)
	}
}

// TestInstallRBACSuffices applies the manifests for real, then runs the controller (as
// its service account, impersonated) and the agent's cluster side (with a token bound to
// a pod on its node, as its DaemonSet pod has, so that the admission policies apply):
// the least privileges the manifests grant are enough for what they do.
func TestInstallRBACSuffices(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	const ns = installedNamespace
	applyInstall(t)
	as := func(sa string) *kube.Clients {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
		c, err := kube.NewClients(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// The controller renders a pool, targets its node and writes its status.
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rbac", 1, nil)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(runCtx, controller.Config{Clients: as("mcotui-controller"), Namespace: ns, Identity: "rbac-controller",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller as its service account: %v", err)
		}
	}()
	cmdtest.WaitFor(t, "node targeted by the controller running as mcotui-controller", func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, "rbac-0", metav1.GetOptions{})
		return err == nil && nodeanno.Desired(n) != "" && nodeanno.Desired(n) == c.GetPool(t).Spec.Configuration.Name
	})
	cmdtest.WaitFor(t, "pool status written", func() bool {
		p := c.GetPool(t)
		return p.Status.MachineCount == 1 && p.Status.ObservedGeneration == p.Generation
	})

	// The agent's cluster side: watch its node, read its pool, its config and the
	// policy, write its MachineConfigNode, annotate, cordon, drain and uncordon.
	a, err := nodeagent.NewNodeAgent(ctx, agentOn(t, "rbac-0"), "rbac-0", "rbac", nodeagent.NodeAgentOptions{})
	if err != nil {
		t.Fatalf("agent as its service account: %v", err)
	}
	defer a.Close()
	desired := c.GetPool(t).Spec.Configuration.Name
	if _, err := a.MachineConfig(ctx, desired); err != nil {
		t.Error(err)
	}
	if _, err := a.DisruptionPolicy(ctx); err != nil {
		t.Error(err)
	}
	if _, err := a.Pools(ctx); err != nil {
		t.Error(err)
	}
	if err := a.SetConditions(ctx, desired, phase.Prepared("[None]", false)); err != nil {
		t.Error(err)
	}
	if err := a.Cordon(ctx); err != nil {
		t.Error(err)
	}
	if err := a.Uncordon(ctx); err != nil {
		t.Error(err)
	}
	if err := a.Annotate(ctx, map[string]string{nodeanno.CurrentConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone}); err != nil {
		t.Error(err)
	}
	if err := a.Drain(ctx, nil, nil, nil); err != nil {
		t.Errorf("drain as the agent: %v", err)
	}
	cmdtest.WaitFor(t, "pool updated", func() bool { return rollout.PoolUpdated(c.GetPool(t)) })

	// What neither may do.
	if _, err := as("mcotui-agent").Kube.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent may list secrets: %v", err)
	}
	if _, err := as("mcotui-controller").Kube.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may list secrets outside %s: %v", bootimage.MachineAPINamespace, err)
	}
	// The generate loop's reads: the two kinds, and the kubeadm base by name only.
	ctrl := as("mcotui-controller")
	if _, err := ctrl.MachineConfig.MachineconfigurationV1().KubeletConfigs().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the controller may not list kubeletconfigs: %v", err)
	}
	if _, err := ctrl.MachineConfig.MachineconfigurationV1().ContainerRuntimeConfigs().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the controller may not list containerruntimeconfigs: %v", err)
	}
	if _, err := ctrl.Kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubelet-config", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("the controller may not read kube-system/kubelet-config: %v", err)
	}
	if _, err := ctrl.Kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may read other ConfigMaps of kube-system: %v", err)
	}
	// The controller deletes the MachineConfigs it generated from a KubeletConfig or a
	// ContainerRuntimeConfig (RBAC cannot tell them from others by name: the admission
	// policy does, TestInstallPolicyConfinesTheControllersMachineConfigs), but never a
	// pool.
	if err := as("mcotui-controller").MachineConfig.MachineconfigurationV1().MachineConfigPools().Delete(ctx, "rbac", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may delete pools: %v", err)
	}
	// A MachineConfigNode is its agent's, spec and status, as MCO's daemon's is: the
	// controller reads them and writes none.
	ctrlMCNs := ctrl.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := ctrlMCNs.Get(ctx, "rbac-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the controller may not read the agent's MachineConfigNode: %v", err)
	}
	mcn.Spec.ConfigVersion.Desired = "rendered-rbac-elsewhere"
	if _, err := ctrlMCNs.Update(ctx, mcn, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may update MachineConfigNodes: %v", err)
	}
	if _, err := ctrlMCNs.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may update MachineConfigNodes' status: %v", err)
	}
}

var updateInstall = flag.Bool("update-install", false, "rewrite testdata/install/*.golden from the current output")

// TestInstallGolden keeps the manifests mcotui writes itself (all but the CRDs, which
// TestInstallCRDsMatchModule covers) under review: a change to the RBAC, the DaemonSet or
// the Deployment shows in the golden file's diff.
func TestInstallGolden(t *testing.T) {
	code, out, errOut := mcotui.Cmd(t, "install", "--image", "ghcr.io/mcotui/mcotui:test", "--boot-images")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	i := strings.Index(out, "---\napiVersion: v1\nkind: Namespace\n")
	if i < 0 {
		t.Fatalf("no Namespace after the CRDs:\n%s", out)
	}
	got := out[i:]
	golden := filepath.Join("testdata", "install", "manifests.golden.yaml")
	if *updateInstall {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestInstallGolden . -update-install to create it)", err)
	}
	if got != string(want) {
		t.Errorf("install output differs from %s (rerun with -update-install if intended):\n%s", golden, got)
	}
}
