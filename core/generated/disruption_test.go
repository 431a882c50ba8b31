package generated_test

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/render"
)

// TestKubeletConfigRestartsKubelet: rendering a pool with a KubeletConfig's
// MachineConfig, and then with the KubeletConfig changed, gives a node the default
// policy's Restart kubelet.service, with no drain and no reboot, as the agent would
// decide it; so does taking it away (the file goes back to the base's content).
func TestKubeletConfigRestartsKubelet(t *testing.T) {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "worker"}},
	}}
	const base = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 110\n"
	// The node's kubelet configuration as kubeadm wrote it, carried by a base config.
	baseMC := mctest.MachineConfig(t, "00-worker", mctest.Config{Role: "worker", Files: []mctest.File{{Path: generated.DefaultKubeletConfigPath, Data: base, Mode: 0o644}}})
	gen := func(raw string) *mcfgv1.MachineConfig {
		kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "kc"}, Spec: mcfgv1.KubeletConfigSpec{KubeletConfig: &runtime.RawExtension{Raw: []byte(raw)}}}
		mc, err := generated.Kubelet(kc, pool, generated.KubeletBase{Config: []byte(base), Path: generated.DefaultKubeletConfigPath}, generated.Name("worker", generated.KindKubelet, ""))
		if err != nil {
			t.Fatal(err)
		}
		return mc
	}
	rendered := func(mcs ...*mcfgv1.MachineConfig) configdiff.Config {
		r, err := render.Render(pool, mcs)
		if err != nil {
			t.Fatal(err)
		}
		c, err := configdiff.FromMachineConfig(r.Config)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// With the file in a base config (as OpenShift's templates carry kubelet.conf) and
	// without (kubeadm: no MachineConfig holds it; taking the KubeletConfig away removes
	// the file from the config, and the agent puts back the original it kept).
	other := mctest.MachineConfig(t, "00-worker", mctest.Config{Role: "worker", Files: []mctest.File{{Path: "/etc/motd", Data: "hi", Mode: 0o644}}})
	steps := map[string][2]configdiff.Config{}
	for variant, b := range map[string]*mcfgv1.MachineConfig{"base": baseMC, "kubeadm": other} {
		none := rendered(b)
		first := rendered(b, gen(`{"maxPods":250}`))
		second := rendered(b, gen(`{"maxPods":300}`))
		steps[variant+" add"] = [2]configdiff.Config{none, first}
		steps[variant+" change"] = [2]configdiff.Config{first, second}
		steps[variant+" remove"] = [2]configdiff.Config{second, none}
	}
	for name, step := range steps {
		d := disruption.Evaluate(disruption.DefaultPolicy(), configdiff.Compute(step[0], step[1]))
		if got := disruption.Join(d.Actions); got != "Restart kubelet.service" || d.Drain {
			t.Errorf("%s: actions [%s] drain %t, want [Restart kubelet.service] and no drain", name, got, d.Drain)
		}
	}
}
