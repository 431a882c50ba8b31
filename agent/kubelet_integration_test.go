package agent

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// kubeadmBase is the kubelet configuration kubeadm writes to /var/lib/kubelet/config.yaml
// (and keeps in kube-system/kubelet-config), shortened.
const kubeadmBase = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
maxPods: 110
`

// A KubeletConfig's generated MachineConfig, rendered into the pool's config as the
// controller renders it, rolls out through the real agent with a kubelet restart and
// neither drain nor reboot (the default node disruption policy's kubelet entry); its
// deletion renders the pool without it, and the node goes back to kubeadm's own file,
// again with a restart alone.
func TestIntegrationKubeletConfigRestartsKubelet(t *testing.T) {
	ctx := kubetest.Context(t)
	n := newLiveNode(t, "it-kubelet", nil, false)
	writeHostFile(t, n.h.dir, "/usr/lib/systemd/system/kubelet.service", "[Service]\nExecStart=/usr/bin/kubelet\n", 0o644)
	writeHostFile(t, n.h.dir, disruption.KubeadmKubeletConfigPath, kubeadmBase, 0o644)
	pool, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "max-pods", UID: "kc-uid"}}
	kc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
	kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(`{"maxPods":250}`)}
	gen, err := generated.Kubelet(kc, pool, generated.KubeletBase{Config: []byte(kubeadmBase), Path: disruption.KubeadmKubeletConfigPath}, generated.Name("worker", generated.KindKubelet, ""))
	if err != nil {
		t.Fatal(err)
	}
	// The pool's own MachineConfig (configA's files) and the generated one, rendered.
	base := mctest.MachineConfig(t, "00-worker-a", mctest.Config{Role: "worker", Files: []mctest.File{
		{Path: "/etc/mcotui/a.conf", Data: "a=1\n", Mode: 0o644},
		{Path: "/etc/mcotui/b.conf", Data: "b=1\n", Mode: 0o600},
		{Path: "/etc/mcotui/gone.conf", Data: "going away\n"},
	}, SSHKeys: []string{keyOld}})
	// The test pool selects nodes only; render it as a pool that selects its role.
	selecting := pool.DeepCopy()
	selecting.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "worker"}}
	with, err := render.Render(selecting, []*mcfgv1.MachineConfig{base, gen})
	if err != nil {
		t.Fatal(err)
	}
	rendered := ownedBy(with.Config, pool)
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, rendered, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.runPod("web", nil)
	stop, _ := n.start()
	defer stop()

	n.setDesired(rendered.Name)
	n.await("Done on the KubeletConfig's config", doneOn(rendered.Name))
	got := readHostFile(t, n.h.dir, disruption.KubeadmKubeletConfigPath)
	if want := "maxPods: 250\n"; !containsLine(got, want) || !containsLine(got, "cgroupDriver: systemd\n") {
		t.Fatalf("%s after the KubeletConfig:\n%s\nwant kubeadm's base with %q", disruption.KubeadmKubeletConfigPath, got, want)
	}
	if r, b := n.h.systemd.Restarts("kubelet.service"), n.h.logind.Reboots(); r != 1 || b != 0 {
		t.Fatalf("kubelet restarts %d, reboots %d; want 1 and 0", r, b)
	}
	if left := n.podsLeft(); len(left) != 1 {
		t.Fatalf("pods %v: a kubelet restart must not drain", left)
	}

	// Deleted: the pool renders to its own config again.
	n.setDesired(cfgA)
	n.await("Done on A again", doneOn(cfgA))
	if got := readHostFile(t, n.h.dir, disruption.KubeadmKubeletConfigPath); got != kubeadmBase {
		t.Fatalf("%s after the KubeletConfig's deletion:\n%s\nwant kubeadm's own:\n%s", disruption.KubeadmKubeletConfigPath, got, kubeadmBase)
	}
	if r, b := n.h.systemd.Restarts("kubelet.service"), n.h.logind.Reboots(); r != 2 || b != 0 {
		t.Fatalf("after the deletion: kubelet restarts %d, reboots %d; want 2 and 0", r, b)
	}
	if left := n.podsLeft(); len(left) != 1 {
		t.Fatalf("pods %v after the deletion: a kubelet restart must not drain", left)
	}
}

func containsLine(text, line string) bool {
	for l := range strings.Lines(text) {
		if l == line {
			return true
		}
	}
	return false
}
