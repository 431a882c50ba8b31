package vm

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// startKubeletController runs the real controller, whose base kubelet configuration is
// the test node's (a ConfigMap of a namespace of its own), until the test ends.
func startKubeletController(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	clients, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, name+"-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	base := controller.KubeletBase{Namespace: ns, Name: "kubelet-config", Key: "kubelet", Path: kubeletConfigPath}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: base.Name}, Data: map[string]string{base.Key: baseKubeletConfig},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(cctx, controller.Config{
			Clients: clients, Namespace: ns, LeaseName: name, Identity: name, Version: "vm-test", KubeletBase: base,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})).With("controller", name),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
}

// Issue 29, tests 2 and 3 on one real node in a pool of its own that the real controller
// runs (a boot and a Ready node cost minutes under TCG):
//
//   - Budget: a MachineConfig adds a file (Reboot policy) while a pod is under a budget
//     that allows no disruption: the drain waits, the MachineConfigNode naming the pod and
//     the budget; once the budget opens the node drains, reboots and ends Done.
//   - Kubelet: a KubeletConfig (maxPods 317) rolled out by the controller: the kubelet's
//     configuration file changes, the kubelet is restarted without a reboot or a drain,
//     the Node is Ready again and its capacity reads 317 pods.
func TestVMExtendedRealNodeBudgetAndKubelet(t *testing.T) {
	testBegan := time.Now()
	ctx := t.Context()
	name := "vm-kc-" + strings.ToLower(rand.Text()[:5])
	rendered := pinPool(t, name)
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	pool, err := pools.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool.Labels = map[string]string{"pools.example.com/" + name: ""}
	if _, err := pools.Update(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := newKubeNode(t, name, name, rendered)
	m := n.m
	startKubeletController(t, name)
	awaitAgentActive(t, m)

	// What a subtest creates stays until the test ends: a MachineConfig deleted at the end
	// of Budget would roll the node back (and reboot it) under Kubelet.
	outer := t
	if !t.Run("Budget", func(t *testing.T) {
		guarded := n.pod("guarded")
		guarded.Labels = map[string]string{"app": "guarded"}
		n.runPods(guarded)
		pdb := kubetest.CreateBudget(t, env.Kube, n.ns, "guarded", 0)
		boot1 := m.Boots()[len(m.Boots())-1]
		mc := mctest.MachineConfig(t, "50-"+name+"-file", mctest.Config{Role: name, Files: []mctest.File{{Path: "/etc/mcotui-vm/budget.conf", Data: "budget=1\n", Mode: 0o644}}})
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		outer.Cleanup(func() {
			_ = env.MachineConfig.MachineconfigurationV1().MachineConfigs().Delete(context.Background(), mc.Name, metav1.DeleteOptions{})
		})
		began := time.Now()
		want := fmt.Sprintf("pod %s/guarded is protected by PodDisruptionBudget %s/guarded", n.ns, n.ns)
		m.Await(t, "the drain blocked, naming the pod and its budget", func() (bool, string) {
			c := n.condition(phase.Drained)
			return c.Status == metav1.ConditionUnknown && strings.Contains(c.Message, want), fmt.Sprintf("%+v", c)
		})
		t.Logf("vm %s: MachineConfig to the drain reported blocked %s", name, time.Since(began).Round(time.Second))
		if tasks := n.runtimeTasks(); len(tasks) == 0 {
			t.Errorf("no container runs while the drain is blocked")
		}
		if len(m.Boots()) != 1 {
			t.Fatalf("boots %v while the drain is blocked", m.Boots())
		}
		kubetest.SetBudget(t, env.Kube, pdb, 1)
		opened := time.Now()
		bootCtx, cancelBoot := m.Context()
		_, err := m.WaitBoot(bootCtx, boot1)
		cancelBoot()
		if err != nil {
			t.Fatal(err)
		}
		m.Await(t, "the node Done on the pool's new config", func() (bool, string) {
			node := n.get()
			p, err := pools.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			target := p.Spec.Configuration.Name
			return target != rendered && nodeanno.Current(node) == target && nodeanno.State(node) == nodeanno.StateDone,
				fmt.Sprintf("pool target %s, annotations %v", target, node.Annotations)
		})
		n.awaitReady(true)
		t.Logf("vm %s: budget opened to Done and Ready %s", name, time.Since(opened).Round(time.Second))
		if left := kubeletPods(t, n.name); len(left) != 0 {
			t.Errorf("pods left on the node: %v", left)
		}
		if n.get().Spec.Unschedulable {
			t.Error("the node is still cordoned")
		}
	}) {
		return
	}

	t.Run("Kubelet", func(t *testing.T) {
		boots := len(m.Boots())
		before := m.Run(t, "systemctl show -p InvocationID --value "+kubeletUnit)
		p, err := pools.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		from := p.Spec.Configuration.Name
		kc := &mcfgv1.KubeletConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-max-pods"},
			Spec: mcfgv1.KubeletConfigSpec{
				MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pools.example.com/" + name: ""}},
				KubeletConfig:             &runtime.RawExtension{Raw: []byte(`{"maxPods":317}`)},
			},
		}
		kcs := env.MachineConfig.MachineconfigurationV1().KubeletConfigs()
		if _, err := kcs.Create(ctx, kc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kcs.Delete(context.Background(), kc.Name, metav1.DeleteOptions{}) })
		began := time.Now()
		var target string
		m.Await(t, "the node Done on the config with the KubeletConfig", func() (bool, string) {
			node := n.get()
			p, err := pools.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			target = p.Spec.Configuration.Name
			return target != from && nodeanno.Current(node) == target && nodeanno.State(node) == nodeanno.StateDone,
				fmt.Sprintf("pool target %s, annotations %v", target, node.Annotations)
		})
		doneAt := time.Now()
		m.Await(t, "the Node Ready with 317 pods of capacity", func() (bool, string) {
			node := n.get()
			s, msg := nodeReady(node)
			pods := node.Status.Capacity[corev1.ResourcePods]
			return s == corev1.ConditionTrue && pods.Value() == 317, fmt.Sprintf("Ready=%s %s, capacity pods %s", s, msg, pods.String())
		})
		t.Logf("vm %s: KubeletConfig to Done %s, to Ready with capacity 317 %s", name, doneAt.Sub(began).Round(time.Second), time.Since(began).Round(time.Second))
		if got := m.Run(t, "grep -x 'maxPods: 317' "+kubeletConfigPath); got != "maxPods: 317\n" {
			t.Errorf("%s: %q", kubeletConfigPath, got)
		}
		after := m.Run(t, "systemctl show -p InvocationID --value "+kubeletUnit)
		if after == before {
			t.Errorf("%s's InvocationID is still %s: not restarted", kubeletUnit, strings.TrimSpace(after))
		}
		if len(m.Boots()) != boots {
			t.Errorf("boots %v: a kubelet configuration restarts the kubelet, it does not reboot", m.Boots())
		}
		if c := n.condition(phase.Drained); c.Message != "Node Drain Not required for this update." {
			t.Errorf("Drained = %+v: a kubelet restart does not drain", c)
		}
	})
	t.Logf("vm %s: whole test %s", name, time.Since(testBegan).Round(time.Second))
}

// cfgKubelet is cfgReboot with the kubelet's configuration changed (maxPods 317): the
// default node disruption policy restarts kubelet.service for it, without a drain.
const cfgKubelet = "rendered-worker-vmkubelet"

func kubeletConfig(t testing.TB) *mcfgv1.MachineConfig {
	files := append(slices.Clone(rebootFiles), mctest.File{Path: kubeletConfigPath, Data: baseKubeletConfig + "maxPods: 317\n", Mode: 0o644})
	return mctest.MachineConfig(t, cfgKubelet, mctest.Config{Files: files, SSHKeys: []string{keyNew}, Units: []mctest.Unit{
		{Name: "hello.service", Contents: helloUnit, Enabled: mctest.Bool(true)},
		{Name: "example.service", Dropins: map[string]string{"10-mcotui.conf": exampleDropin}},
		{Name: "tobemasked.service", Mask: mctest.Bool(true)},
	}})
}

// Issue 29, test 4, on one real node whose agent is armed (on the first boot) at the
// failpoint after the drain's first eviction:
//
//   - Drain: a Reboot-policy update of a node running the web pods under their budget;
//     the power is cut after the first eviction; the node boots, the agent resumes the
//     drain, reboots for the update and ends Done, uncordoned, the budget never broken.
//   - KubeletRestart: a change of the kubelet's configuration; the power is cut as
//     systemd stops the kubelet for the agent's restart; the node boots on the new
//     configuration, the agent resumes, and ends Done with the Node Ready at 317 pods.
func TestVMExtendedRealNodePowerCut(t *testing.T) {
	testBegan := time.Now()
	clusterObjects(t)
	createRendered(t, kubeletConfig(t))
	bin := failpointBinary(t)
	name := "vm-cut-" + strings.ToLower(rand.Text()[:5])
	n := newKubeNode(t, name, workerPool, cfgBase, func(o *Options) {
		o.Binary = bin
		o.AgentScript = armedOnce(o.Node, agent.FailDuringDrain)
	})
	m := n.m
	kwokNode := kwokNodeFor(t, n)

	if !t.Run("Drain", func(t *testing.T) {
		rs, pods := webPods(t, n)
		n.runPods(pods...)
		web := startWebBudget(t, n, kwokNode, rs)
		awaitAgentActive(t, m)
		n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
		waitCtx, cancelWait := m.Context()
		_, err := m.WaitConsole(waitCtx, regexp.MustCompile(`MCOTUI-FAILPOINT `+regexp.QuoteMeta(agent.FailDuringDrain)+`\r?\n`))
		cancelWait()
		if err != nil {
			t.Fatal(err)
		}
		m.PowerCut()
		cutAt := time.Now()
		boot := m.Boot()
		bootCtx, cancelBoot := m.Context()
		_, err = m.WaitBoot(bootCtx, boot) // the update's own reboot
		cancelBoot()
		if err != nil {
			t.Fatal(err)
		}
		n.awaitState(cfgReboot, nodeanno.StateDone)
		n.awaitReady(true)
		t.Logf("vm %s: power cut during the drain to Done and Ready %s", name, time.Since(cutAt).Round(time.Second))
		if f := web.fewestHealthy(); f < 2 {
			t.Errorf("the budget did not hold across the power cut: %d healthy web pods at one point, minAvailable 2", f)
		}
		if left := kubeletPods(t, n.name); len(left) != 0 {
			t.Errorf("pods left on the node: %v", left)
		}
		if n.get().Spec.Unschedulable {
			t.Error("the node is still cordoned")
		}
		if boots := m.Boots(); len(boots) != 3 {
			t.Errorf("boots %v: want the first, the power-on after the cut, and the update's reboot", boots)
		}
		checkFiles(t, m, rebootFiles)
	}) {
		return
	}

	t.Run("KubeletRestart", func(t *testing.T) {
		boots := len(m.Boots())
		mark := m.ConsoleMark()
		n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgKubelet})
		waitCtx, cancelWait := m.Context()
		_, err := m.WaitConsoleSince(waitCtx, mark, regexp.MustCompile(`Stopping kubelet\.service`))
		cancelWait()
		if err != nil {
			t.Fatal(err)
		}
		m.PowerCut()
		cutAt := time.Now()
		m.Boot()
		n.awaitState(cfgKubelet, nodeanno.StateDone)
		m.Await(t, "the Node Ready with 317 pods of capacity", func() (bool, string) {
			node := n.get()
			s, msg := nodeReady(node)
			pods := node.Status.Capacity[corev1.ResourcePods]
			return s == corev1.ConditionTrue && pods.Value() == 317 && node.Status.NodeInfo.BootID == m.Boots()[len(m.Boots())-1],
				fmt.Sprintf("Ready=%s %s, capacity pods %s, boot %s", s, msg, pods.String(), node.Status.NodeInfo.BootID)
		})
		t.Logf("vm %s: power cut during the kubelet's restart to Done and Ready at 317 pods %s", name, time.Since(cutAt).Round(time.Second))
		if got := len(m.Boots()); got != boots+1 {
			t.Errorf("boots %v: want only the power-on after the cut", m.Boots())
		}
		checkFiles(t, m, []mctest.File{{Path: kubeletConfigPath, Data: baseKubeletConfig + "maxPods: 317\n", Mode: 0o644}})
		if n.get().Spec.Unschedulable {
			t.Error("the node is cordoned: a kubelet restart does not drain")
		}
	})
	t.Logf("vm %s: whole test %s", name, time.Since(testBegan).Round(time.Second))
}
