package cluster

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// statusBenchNodes is the cluster size of BenchmarkStatus.
const statusBenchNodes = 5000

var benchStatusBase = flag.String("bench.status-baseline", "", "an mcotui binary built from another commit, run in turn with the others (as baseline-*), to see what a change gained in the same run")

// BenchmarkStatus compares `mcotui status -o wide` with `kubectl get
// machineconfignodes -o wide` on one API server holding 5,000 Nodes, each with a
// MachineConfigNode: three masters, the rest workers, 1% of the workers mid-update.
// Both are the real binaries (mcotui built once, kubectl of the control plane's
// version), run with the same kubeconfig, output to /dev/null; the status command
// runs a third way too, in-process, without the process start and client setup, and
// -bench.status-baseline adds a fourth, another build of mcotui. They take turns, one
// run of each per iteration in a rotated order (ns/op is all of them together), so
// that a change of load on these shared cores falls on each alike. What matters is the
// ratio of the medians: x-kubectl is mcotui's median time over kubectl's
// (in-process-x-kubectl, baseline-x-kubectl the others'); each one's median is
// reported in seconds, the times and the load average before and after are logged
// (-v). Creating the objects (a minute or so) is not timed.
//
// kubectl asks the server for a table of MachineConfigNodes alone (its columns come
// from the CRD); status lists the pools, the MachineConfigNodes and the Nodes (to find
// pool members that have no MachineConfigNode) and formats both tables itself.
func BenchmarkStatus(b *testing.B) {
	env := cluster.Env(b)
	// Within make bench's -timeout 30m: on a loaded machine the cluster's creation alone
	// has taken over 5 minutes, and each of 4 commands' 5 runs up to half a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	began := time.Now()
	if err := createStatusCluster(ctx, env, statusBenchNodes); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d Nodes and MachineConfigNodes created in %s", statusBenchNodes, time.Since(began).Round(time.Second))

	bin := filepath.Join(b.TempDir(), "mcotui")
	// The module's main package by its path, whatever the working directory
	// (cmdtest.Main moves to the module root, where "." would be it too).
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcotui/mcotui").CombinedOutput(); err != nil {
		b.Fatalf("go build mcotui: %v\n%s", err, out)
	}
	binary := func() *exec.Cmd {
		return exec.CommandContext(ctx, bin, "status", "-o", "wide", "--kubeconfig", env.KubeconfigPath)
	}
	kubectl := func() *exec.Cmd { return env.KubectlCommand(ctx, "get", "machineconfignodes", "-o", "wide") }

	// Both must list every node once before either is timed.
	for name, cmd := range map[string]*exec.Cmd{"mcotui status -o wide": binary(), "kubectl get machineconfignodes -o wide": kubectl()} {
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		if rows := strings.Count(string(out), "\n"); rows < statusBenchNodes {
			b.Fatalf("%s printed %d lines for %d nodes:\n%.2000s", name, rows, statusBenchNodes, out)
		}
	}

	// The three take turns, in an order rotated each iteration, so that a change of the
	// load of these shared cores falls on each alike; the ratios are of the medians.
	runs := []benchContender{
		{name: "kubectl", run: func(b *testing.B) { runBenchCmd(b, kubectl()) }},
		{name: "mcotui", run: func(b *testing.B) { runBenchCmd(b, binary()) }},
		{name: "in-process", run: func(b *testing.B) {
			var stderr bytes.Buffer
			args := []string{"status", "-o", "wide", "--kubeconfig", env.KubeconfigPath}
			if code := mcotui.Run(args, cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr}); code != 0 {
				b.Fatalf("%v: exit %d: %s", args, code, stderr.String())
			}
		}},
	}
	if *benchStatusBase != "" {
		runs = append(runs, benchContender{name: "baseline", run: func(b *testing.B) {
			runBenchCmd(b, exec.CommandContext(ctx, *benchStatusBase, "status", "-o", "wide", "--kubeconfig", env.KubeconfigPath))
		}})
	}
	b.Run("wide_vs_kubectl", func(b *testing.B) {
		b.Logf("load average before: %s", loadAverage(b))
		for i := 0; b.Loop(); i++ {
			for k := range runs {
				r := &runs[(i+k)%len(runs)]
				began := time.Now()
				r.run(b)
				r.times = append(r.times, time.Since(began))
				b.Logf("%s run %d: %s", r.name, len(r.times), r.times[len(r.times)-1].Round(time.Millisecond))
			}
		}
		b.Logf("load average after: %s", loadAverage(b))
		kubectl := cmdtest.Median(runs[0].times)
		for _, r := range runs {
			b.Logf("%s: %v", r.name, cmdtest.RoundMillis(r.times))
			b.ReportMetric(cmdtest.Median(r.times).Seconds(), r.name+"-s")
		}
		b.ReportMetric(float64(cmdtest.Median(runs[1].times))/float64(kubectl), "x-kubectl")
		b.ReportMetric(float64(cmdtest.Median(runs[2].times))/float64(kubectl), "in-process-x-kubectl")
		if len(runs) > 3 {
			b.ReportMetric(float64(cmdtest.Median(runs[3].times))/float64(kubectl), "baseline-x-kubectl")
		}
		for i := range runs {
			runs[i].times = nil
		}
	})
}

// benchContender is one of the commands BenchmarkStatus times, with its times.
type benchContender struct {
	name  string
	run   func(b *testing.B)
	times []time.Duration
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage(b *testing.B) string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// runBenchCmd runs cmd with its output to /dev/null, failing b when it fails.
func runBenchCmd(b *testing.B, cmd *exec.Cmd) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.String())
	}
}

// createStatusCluster creates pools master and worker and n Nodes (bench-master-*,
// bench-worker-*) with the status a kubelet reports (without the image list), each
// with its MachineConfigNode; a node already there is left as it is, so a second run
// (-count) reuses the first one's.
func createStatusCluster(ctx context.Context, env *kubetest.Env, n int) error {
	const (
		masterCfg = "rendered-master-06c9c4a1d3f5e7b9c2a4f6e8d0b1c3a5"
		oldCfg    = "rendered-worker-f4b64a2c8e1d3f5a7b9c0e2d4f6a8b1c"
		newCfg    = "rendered-worker-c1b41a3e5d7f9b2c4e6a8d0f1b3c5e7a"
		masters   = 3
	)
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	for _, p := range []struct{ name, role, config string }{{"master", "master", masterCfg}, {"worker", "worker", oldCfg}} {
		pool := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: p.role}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + p.role: ""}},
			},
		}
		created, err := pools.Create(ctx, pool, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create machineconfigpool %s: %w", p.name, err)
		}
		created.Status = mcfgv1.MachineConfigPoolStatus{
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: p.config}},
		}
		if _, err := pools.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of machineconfigpool %s: %w", p.name, err)
		}
	}

	now := metav1.Now()
	return parallelBench(n, 32, func(i int) error {
		role, name := "worker", fmt.Sprintf("bench-worker-%04d", i)
		desired, current := oldCfg, oldCfg
		conds := []phase.Condition{phase.UpToDate(name)}
		switch {
		case i < masters:
			role, name, desired, current = "master", fmt.Sprintf("bench-master-%d", i), masterCfg, masterCfg
			conds = []phase.Condition{phase.UpToDate(name)}
		case i%100 == 50: // mid-update: draining
			desired = newCfg
			conds = []phase.Condition{phase.Prepared("[Reboot]", true), phase.Executing(), phase.CordonDone(), phase.Draining("drain-"+newCfg, "uncordon-"+oldCfg)}
		case i%100 < 30: // already updated
			desired, current = newCfg, newCfg
		}
		state := nodeanno.StateDone
		if desired != current {
			state = nodeanno.StateWorking
		}
		node, err := env.Kube.CoreV1().Nodes().Create(ctx, benchNode(name, role, "us-east-1"+string(rune('a'+i%3)), current, desired, state), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		node.Status = benchNodeStatus(name, i, now)
		if _, err := env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of node %s: %w", name, err)
		}
		mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
		mcn, err := mcns.Create(ctx, &mcfgv1.MachineConfigNode{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}},
			},
			Spec: mcfgv1.MachineConfigNodeSpec{
				Node:          mcfgv1.MCOObjectReference{Name: name},
				Pool:          mcfgv1.MCOObjectReference{Name: role},
				ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: desired},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create machineconfignode %s: %w", name, err)
		}
		mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: current, Desired: desired}
		mcn.Status.Conditions, _ = phase.Apply(nil, desired, now, conds...)
		if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of machineconfignode %s: %w", name, err)
		}
		return nil
	})
}

func benchNode(name, role, zone, current, desired, state string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			"node-role.kubernetes.io/" + role: "", corev1.LabelHostname: name, corev1.LabelOSStable: "linux",
			corev1.LabelArchStable: "amd64", corev1.LabelInstanceTypeStable: "m6i.xlarge",
			corev1.LabelTopologyRegion: "us-east-1", corev1.LabelTopologyZone: zone,
		},
		Annotations: map[string]string{
			nodeanno.CurrentConfigKey: current, nodeanno.DesiredConfigKey: desired, nodeanno.StateKey: state,
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		},
	}}
}

// benchNodeStatus is what a kubelet reports, less the images.
func benchNodeStatus(name string, i int, now metav1.Time) corev1.NodeStatus {
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16092732Ki"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("125293548Ki"),
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return corev1.NodeStatus{
		Capacity:    res,
		Allocatable: res,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)},
			{Type: corev1.NodeHostName, Address: name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i+1),
			KernelVersion: "6.12.0-55.el10.x86_64", OSImage: "Fedora CoreOS 42", ContainerRuntimeVersion: "cri-o://1.33.2",
			KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
		},
	}
}

// parallelBench calls f(0) .. f(n-1), at most workers at a time, and returns the
// first error.
func parallelBench(n, workers int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}
