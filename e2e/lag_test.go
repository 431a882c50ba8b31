package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// The cluster of TestRolloutOnLaggingInformers: a pool of its own, with nodes and
// configs no other test's pool selects.
const (
	lagPool  = "lagging"
	lagCount = 8
	// informerLag is how late the controllers' informers see every change.
	informerLag = time.Second
	// controllerSA is the service account `mcotui install` runs the controller as.
	controllerSA = "mcotui-controller"
)

var (
	lagMaxUnavailable = intstr.FromInt32(2)
	lagBase           = []file{{"/etc/e2e/lagging.conf", "lagging=1\n", 0o644}}
	lagRolloutFile    = []file{{"/etc/e2e/lagging-v2/rollout.conf", "rollout=2 on lagging informers\n", 0o644}}
)

// TestRolloutOnLaggingInformers rolls a config out to a pool with real agents, driven
// by `mcotui controller` processes whose informers see every change a second late:
// they reach the API server through a proxy that holds back the bytes of every watch
// response by informerLag (their GETs and writes pass at once), with the token of the
// controller's service account, so they run with the RBAC `mcotui install` gives them.
// The controllers plan from those caches: only their record of their own writes keeps
// them from targeting more nodes than maxUnavailable before their cache shows the
// earlier targets. The watcher, which watches without lag, checks maxUnavailable at
// every change.
func TestRolloutOnLaggingInformers(t *testing.T) {
	logf := stepLog(t)
	ctx := t.Context()
	mcfg := env.MachineConfig.MachineconfigurationV1()
	installMcotui(t)

	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: lagPool},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: lagPool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(lagPool): ""}},
			MaxUnavailable:        &lagMaxUnavailable,
		},
	}
	if _, err := mcfg.MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pool %s: %v", pool.Name, err)
	}
	base := machineConfig(t, "00-lagging-e2e-base", lagPool, lagBase)
	if _, err := mcfg.MachineConfigs().Create(ctx, base, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create machineconfig %s: %v", base.Name, err)
	}
	var names []string
	poolOf := map[string]string{}
	for i := range lagCount {
		n := fmt.Sprintf("lagging-%02d", i)
		names, poolOf[n] = append(names, n), lagPool
	}

	hist := newHistory([]*mcfgv1.MachineConfigPool{pool}, poolOf)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := hist.start(t, watchCtx, leaseNamespace, install.LeaseName)
	t.Cleanup(func() { stopWatch(); <-watchDone })

	// The proxy outlives the controllers: cleanups run last registered first.
	proxy, err := env.StartLaggingProxy(informerLag)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	token, err := env.ServiceAccountToken(ctx, leaseNamespace, controllerSA)
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	kubeconfig := filepath.Join(logDir, "lagging.kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var ctrls []*controllerProc
	for _, id := range []string{"lagging-ctrl-1", "lagging-ctrl-2"} {
		ctrls = append(ctrls, startControllerWith(t, kubeconfig, logDir, leaseNamespace, id))
		ids[id] = true
	}
	logf("controllers started as %s/%s, their watches %s late through %s", leaseNamespace, controllerSA, informerLag, proxy.URL)

	rendered := awaitRendered(t, lagPool, "")
	logf("pool rendered: %s", rendered)
	machines, stopAgents := startMachines(t, names, poolOf, map[string]string{lagPool: rendered},
		func(string) map[string]string { return map[string]string{roleLabel(lagPool): ""} },
		func(string) []file { return lagBase })
	logf("%d nodes Ready, their agents running", len(names))
	awaitInstalled(t, names, map[string]string{lagPool: rendered})
	hist.arm()
	logf("installed; the maxUnavailable check is armed")

	// The rollout: a file in a directory no node disruption policy matches, so every
	// node drains and reboots, and stays unavailable for seconds.
	newMC := machineConfig(t, "99-lagging-e2e-rollout", lagPool, lagRolloutFile)
	if _, err := mcfg.MachineConfigs().Create(ctx, newMC, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create machineconfig %s: %v", newMC.Name, err)
	}
	target := awaitRendered(t, lagPool, rendered)
	logf("machineconfig %s created; rolling out %s", newMC.Name, target)
	kubetest.EventuallyProgress(t, stallTimeout, "the pool Updated at the new config", func() kubetest.Progress {
		return poolsProgress(t, map[string]string{lagPool: target})
	})
	logf("pool Updated")

	nodes := listNodes(t)
	want := append(append([]file{}, lagBase...), lagRolloutFile...)
	for _, n := range names {
		node := nodes[n]
		if nodeanno.Current(node) != target || nodeanno.Desired(node) != target || nodeanno.State(node) != nodeanno.StateDone || node.Spec.Unschedulable {
			t.Errorf("node %s: current %q, desired %q, state %q, unschedulable %t; want current = desired = %s, Done, schedulable",
				n, nodeanno.Current(node), nodeanno.Desired(node), nodeanno.State(node), node.Spec.Unschedulable, target)
		}
		if diffs := machines[n].checkFiles(want); len(diffs) > 0 {
			t.Errorf("node %s: the host's files differ from %s: %s", n, target, strings.Join(diffs, "; "))
		}
		if r := machines[n].logind.Reboots(); r != 1 {
			t.Errorf("node %s rebooted %d times, want once", n, r)
		}
	}

	stopAgents()
	stopWatch()
	<-watchDone
	writes, leases, violations, peak, changes, _ := hist.checked(t)
	logf("maxUnavailable violations: %d over %d recorded changes; peak unavailable: %d (max %s), informers %s late",
		violations, changes, peak[lagPool], lagMaxUnavailable.String(), informerLag)
	if changes == 0 {
		t.Error("the watcher recorded no change during the rollout: the check saw nothing")
	}
	byWriter, problems := checkDrivers(writes, leases, ids, map[string]bool{target: true})
	for _, p := range problems {
		t.Error(p)
	}
	total := 0
	for _, ws := range byWriter {
		total += len(ws)
	}
	if total != lagCount {
		t.Errorf("%d desiredConfig writes to %s, want one per node (%d)", total, target, lagCount)
	}
	// The controllers' watches went through the proxy, or the lag was not theirs.
	watches, others := proxy.Requests()
	if watches == 0 {
		t.Errorf("the proxy passed on no watch request (and %d others): the controllers' informers did not lag", others)
	}
	logf("through the proxy: %d watch requests, %d others", watches, others)
	// The controllers ran with the service account's RBAC: a refusal is a rule the
	// install lacks.
	for _, c := range ctrls {
		b, err := os.ReadFile(c.logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "forbidden") {
				t.Errorf("controller %s, running as %s, was refused: %s", c.identity, controllerSA, l)
			}
		}
	}
}
