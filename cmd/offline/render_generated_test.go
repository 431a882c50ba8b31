package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"
)

const generatedInputs = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
  labels:
    pools.operator.machineconfiguration.openshift.io/worker: ""
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: ""
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 00-worker
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.5.0
---
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: max-pods
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
  kubeletConfig:
    maxPods: 250
---
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: bad
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
  kubeletConfig:
    clusterDomain: other.local
---
apiVersion: machineconfiguration.openshift.io/v1
kind: ContainerRuntimeConfig
metadata:
  name: pids
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
  containerRuntimeConfig:
    pidsLimit: 4096
`

const kubeadmConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kubelet-config
  namespace: kube-system
data:
  kubelet: |
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    clusterDomain: cluster.local
    maxPods: 110
`

// TestRenderGenerated: render takes KubeletConfigs and ContainerRuntimeConfigs as
// inputs and renders the pool with the MachineConfigs generated from them, merged
// onto the kubeadm ConfigMap among the inputs; a refused one is a warning naming the
// field; without any base, the error says how to give one.
func TestRenderGenerated(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(generatedInputs), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runRender(t, "render", "--pool", "worker", "-o", "json", dir)
	if code != 1 || !strings.Contains(stderr, "no base kubelet configuration") || !strings.Contains(stderr, "--kubelet-base") {
		t.Errorf("without a base: exit %d, stderr %s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeadm.yaml"), []byte(kubeadmConfigMap), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runRender(t, "render", "--pool", "worker", "-o", "json", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stderr, "Warning: KubeletConfig bad is not applied: KubeletConfiguration: clusterDomain is not allowed to be set") {
		t.Errorf("stderr = %s", stderr)
	}
	var mc mcfgv1.MachineConfig
	if err := yaml.Unmarshal([]byte(stdout), &mc); err != nil {
		t.Fatal(err)
	}
	s := string(mc.Spec.Config.Raw)
	for _, want := range []string{"/var/lib/kubelet/config.yaml", "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"} {
		if !strings.Contains(s, want) {
			t.Errorf("rendered config has no %s: %s", want, s)
		}
	}

	// --kubelet-base and --kubelet-config-path win over the ConfigMap.
	base := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(base, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runRender(t, "render", "--pool", "worker", "-o", "json", "--kubelet-base", base, "--kubelet-config-path", "/etc/kubernetes/kubelet.yaml", dir)
	if code != 0 || !strings.Contains(stdout, "/etc/kubernetes/kubelet.yaml") {
		t.Errorf("exit %d, stderr %s, stdout %s", code, stderr, stdout)
	}
}
