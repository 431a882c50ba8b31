package vm

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// The agent as it runs in production: the pod of install's DaemonSet (privileged, the
// host's PID namespace and network, the host's root at /rootfs, its journal in the
// host's /var/lib/mcotui), from an image of the mcotui binary under test pushed to the
// node's registry, on the real node. The systemd unit of the guest image does not run
// it. The one change to install's pod: the agent reads agentPodKubeconfig, which names
// the API server where the guest reaches it (the guest has no service network) and
// authenticates with the pod's own projected token.

// noAgentScript keeps the image's mcotui-agent.service from running an agent: the
// DaemonSet's pod is the node's agent.
const noAgentScript = "#!/bin/sh\n# The agent runs as install's DaemonSet's pod on this node.\nexec sleep infinity\n"

// podAgentLogs are the agent pods' container logs in the guest, as the kubelet keeps them.
const podAgentLogs = "/var/log/pods/" + installNamespace + "_*/agent/*.log"

// startAgentPod creates the r-th pod of install's DaemonSet on n, as the DaemonSet
// controller would, and waits until the kubelet reports it Running and Ready (the
// agent's journal open and the API server reached, its readiness probe says).
func (n *kubeNode) startAgentPod(r int) *corev1.Pod {
	n.t.Helper()
	p := agentPod(installMcotui(n.t), n.name, fmt.Sprintf("mcotui-agent-%s-%d", n.name, r))
	c := &p.Spec.Containers[0]
	c.Args = append(c.Args, "--kubeconfig", "/rootfs"+TestDiskMount+"/"+agentPodKubeconfig)
	return n.runPods(p)[0]
}

// Issue 29: the agent as install's DaemonSet's pod on the real node, through a
// Reboot-policy update. Its drain leaves its own pod (a DaemonSet's); it reboots the node
// through the host's logind; the kubelet's graceful shutdown ends its pod with the
// node's; on the new boot its pod runs again (the kubelet restarts it, or this test,
// playing the DaemonSet controller, replaces the ended one), and the agent in it resumes
// the update from its journal on the host: Done, uncordoned, one reboot, the journal
// holding one Done update whose phases each appear once.
func TestVMExtendedRealNodeAgentPod(t *testing.T) {
	testBegan := time.Now()
	n := startKubeNode(t, "vm-pod-"+strings.ToLower(rand.Text()[:5]), workerPool, cfgBase, kubeNodeSpec{podAgent: true},
		func(o *Options) { o.AgentScript = noAgentScript })
	m := n.m
	ctx := t.Context()
	t.Cleanup(func() {
		if t.Failed() && m.Running() {
			ctx, cancel := m.Context()
			defer cancel()
			if r, err := m.Exec(ctx, "tail -n 80 "+podAgentLogs); err == nil {
				t.Logf("vm %s: the agent pods' logs:\n%s%s", n.name, r.Stdout, r.Stderr)
			}
		}
	})

	pushBegan := time.Now()
	if got := pushProgram(t, n.reg, agentImageRepo, mcotuiBin, "usr/bin/mcotui"); got != agentImage {
		t.Fatalf("pushed %s, install's DaemonSet names %s", got, agentImage)
	}
	pod1 := n.startAgentPod(1)
	t.Logf("vm %s: the agent's pod pushed, pulled and ready in %s", n.name, time.Since(pushBegan).Round(time.Second))
	if out := m.Run(t, "pgrep -a -x mcotui || true"); !strings.Contains(out, "/usr/bin/mcotui agent --root /rootfs") || strings.Contains(out, GuestBinary) {
		t.Fatalf("the agent's processes in the guest: %q, want the pod's alone (/usr/bin/mcotui agent --root /rootfs ...)", out)
	}
	boot1 := m.Boots()[0]

	// A workload the drain moves, and the node's other DaemonSet pod it leaves.
	scratch := n.pod("scratch", "write", "/data/marker")
	scratch.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	scratch.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	n.runPods(scratch)

	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgReboot})
	bootCtx, cancelBoot := m.Context()
	boot2, err := m.WaitBoot(bootCtx, boot1)
	cancelBoot()
	if err != nil {
		t.Fatal(err)
	}
	rebootedAt := time.Now()

	// The agent's pod on the new boot: the kubelet runs it again if its last status never
	// reached the API server, else it ended with the node and the DaemonSet controller's
	// part is this test's: the ended pod deleted, a new one made.
	var running *corev1.Pod
	replaced := false
	m.Await(t, "the agent's pod running on the new boot, or ended by the shutdown", func() (bool, string) {
		p, err := env.Kube.CoreV1().Pods(installNamespace).Get(ctx, pod1.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			replaced = true
			return true, ""
		case p.Status.Phase == corev1.PodRunning && containerID(p) != "" && containerID(p) != containerID(pod1):
			running = p
			return true, ""
		}
		return false, fmt.Sprintf("phase %s %s", p.Status.Phase, containerStates(p))
	})
	if replaced {
		if err := env.Kube.CoreV1().Pods(installNamespace).Delete(ctx, pod1.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Once the kubelet of the new boot has reported its node: a pod bound before it
		// knows the node's capacity can be refused at admission (UnexpectedAdmissionError),
		// which the DaemonSet controller answers with another pod.
		m.Await(t, "node "+n.name+" Ready on the new boot", func() (bool, string) {
			node := n.get()
			s, msg := nodeReady(node)
			return s == corev1.ConditionTrue && node.Status.NodeInfo.BootID == boot2, fmt.Sprintf("Ready=%s %s, boot %s", s, msg, node.Status.NodeInfo.BootID)
		})
		running = n.startAgentPod(2)
		t.Logf("vm %s: the agent's pod ended with the node; its replacement %s runs on the new boot", n.name, running.Name)
	} else {
		t.Logf("vm %s: the kubelet ran the agent's pod again on the new boot (container %s)", n.name, containerID(running))
	}
	n.awaitState(cfgReboot, nodeanno.StateDone)
	doneAt := time.Now()
	n.awaitReady(true)
	t.Logf("vm %s: desiredConfig to the next boot %s, to Done %s, to Ready %s", n.name,
		rebootedAt.Sub(began).Round(time.Second), doneAt.Sub(began).Round(time.Second), time.Since(began).Round(time.Second))

	// The agent that finished is the new pod's, and it took up the journal's update.
	logs := m.Run(t, "cat "+podAgentLogs)
	if !strings.Contains(logs, "resuming update") {
		t.Errorf("no agent pod's log says it resumed the update after the reboot; the logs:\n%s", lastLines(logs, 60))
	}
	if got := m.Boots(); len(got) != 2 || got[1] != boot2 {
		t.Errorf("boots %v: want exactly one reboot", got)
	}
	checkFiles(t, m, rebootFiles)
	if node := n.get(); node.Spec.Unschedulable || !n.mcn.everCordoned() {
		t.Errorf("unschedulable now %t, ever %t: want cordoned during the update and uncordoned after", node.Spec.Unschedulable, n.mcn.everCordoned())
	}
	if left := kubeletPods(t, n.name); len(left) != 0 {
		t.Errorf("pods left on the node by the drain: %v", left)
	}
	if c := n.condition(phase.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %+v", c)
	}
	// Read on the host, as an operator would: the pod wrote the host's journal.
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultDone || us[0].To != cfgReboot {
		t.Fatalf("the host's journal: %+v, want one Done update to %s", us, cfgReboot)
	}
	seen := map[string]bool{}
	for _, ph := range us[0].Phases {
		if seen[ph.Name] {
			t.Errorf("phase %s journaled twice across the pod's restart: %+v", ph.Name, us[0].Phases)
		}
		seen[ph.Name] = true
	}
	t.Logf("vm %s: whole test %s", n.name, time.Since(testBegan).Round(time.Second))
}
