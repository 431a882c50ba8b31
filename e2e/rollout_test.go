package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// The cluster of the test.
const (
	workerCount = 40
	infraCount  = 10
	workerPool  = "worker"
	infraPool   = "infra"
	// leaseNamespace is where the controllers elect their leader, the namespace
	// `mcotui install` creates.
	leaseNamespace = install.Namespace
	// degradedNode's host refuses the new config until the test repairs it.
	degradedNode = "infra-04"
	// pauseAfter is how many worker nodes get the new config before the pool is paused.
	pauseAfter = 6
	// stallTimeout is how long the waits on many nodes let the cluster stand still
	// before they fail. They wait on progress, not on a budget for the whole: fifty
	// nodes take 40s on an idle 2-core machine and several times that when other test
	// binaries load it, but each node's step (Ready, targeted, updated) takes seconds
	// even then, so two minutes in which no node moves means the rollout stopped.
	stallTimeout = 2 * time.Minute
)

var (
	workerMaxUnavailable = intstr.FromInt32(3)
	infraMaxUnavailable  = intstr.FromString("20%")
)

// file is one file of a MachineConfig, and what it must be on the host.
type file struct {
	path, data string
	mode       os.FileMode
}

// The configs: every node starts with the base files of its pool; the rollout adds a
// file in a directory that no node disruption policy matches, so every node drains and
// reboots for it.
var (
	workerBase  = []file{{"/etc/e2e/base.conf", "base=1\n", 0o644}}
	infraBase   = []file{{"/etc/e2e/infra.conf", "infra=1\n", 0o640}}
	rolloutDir  = "/etc/e2e/v2"
	rolloutFile = []file{{rolloutDir + "/rollout.conf", "rollout=2 from the e2e test\n", 0o644}}
)

func TestRollout(t *testing.T) {
	logf := stepLog(t)
	ctx := t.Context()
	mcfg := env.MachineConfig.MachineconfigurationV1()

	// --- The cluster as `mcotui install` leaves it: the namespace of the Lease, two
	// pools (the custom one takes worker and infra configs, as MCO's custom pools do),
	// their base MachineConfigs.
	installMcotui(t)
	pools := []*mcfgv1.MachineConfigPool{
		{
			ObjectMeta: metav1.ObjectMeta{Name: workerPool},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: workerPool}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(workerPool): ""}},
				MaxUnavailable:        &workerMaxUnavailable,
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: infraPool},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: mcfgv1.MachineConfigRoleLabelKey, Operator: metav1.LabelSelectorOpIn, Values: []string{workerPool, infraPool},
				}}},
				NodeSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(infraPool): ""}},
				MaxUnavailable: &infraMaxUnavailable,
			},
		},
	}
	for _, p := range pools {
		if _, err := mcfg.MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pool %s: %v", p.Name, err)
		}
	}
	for _, mc := range []*mcfgv1.MachineConfig{
		machineConfig(t, "00-worker-e2e-base", workerPool, workerBase),
		machineConfig(t, "00-infra-e2e-base", infraPool, infraBase),
	} {
		if _, err := mcfg.MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create machineconfig %s: %v", mc.Name, err)
		}
	}

	// Node names and pools; infra nodes carry the worker role too, as on OpenShift.
	var names []string
	poolOf := map[string]string{}
	for i := range workerCount {
		n := fmt.Sprintf("worker-%02d", i)
		names, poolOf[n] = append(names, n), workerPool
	}
	for i := range infraCount {
		n := fmt.Sprintf("infra-%02d", i)
		names, poolOf[n] = append(names, n), infraPool
	}

	// --- The watcher, from before anything moves.
	hist := newHistory(pools, poolOf)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := hist.start(t, watchCtx, leaseNamespace, install.LeaseName)
	t.Cleanup(func() { stopWatch(); <-watchDone })

	// --- Two controllers, the whole time.
	logDir := t.TempDir()
	ctrls := map[string]*controllerProc{}
	for _, id := range []string{"ctrl-1", "ctrl-2"} {
		ctrls[id] = startController(t, logDir, leaseNamespace, id)
	}
	logf("controllers ctrl-1 and ctrl-2 started")

	rendered := map[string]string{}
	for _, p := range pools {
		rendered[p.Name] = awaitRendered(t, p.Name, "")
	}
	logf("pools rendered: worker %s, infra %s", rendered[workerPool], rendered[infraPool])

	machines, stopAgents := startMachines(t, names, poolOf, rendered, func(n string) map[string]string {
		labels := map[string]string{roleLabel(workerPool): ""}
		if poolOf[n] == infraPool {
			labels[roleLabel(infraPool)] = ""
		}
		return labels
	}, func(n string) []file { return filesOf(poolOf[n], false) })
	logf("%d nodes Ready", len(names))
	logf("%d agents running", len(names))

	awaitInstalled(t, names, rendered)
	hist.arm()
	logf("installed: every node Done at its pool's rendered config; the maxUnavailable check is armed")

	// --- The degraded host: the directory the new file goes to is a symbolic link out of
	// the root. The agent must refuse it and write nothing, through the link or anywhere.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(machines[degradedNode].dir, filepath.Dir(rolloutDir)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(machines[degradedNode].dir, rolloutDir)); err != nil {
		t.Fatal(err)
	}

	// --- The rollout: a new worker MachineConfig, which both pools take.
	newMC := machineConfig(t, "99-worker-e2e-rollout", workerPool, rolloutFile)
	if _, err := mcfg.MachineConfigs().Create(ctx, newMC, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create machineconfig %s: %v", newMC.Name, err)
	}
	target := map[string]string{}
	for _, p := range pools {
		target[p.Name] = awaitRendered(t, p.Name, rendered[p.Name])
	}
	logf("machineconfig %s created; rolling out worker %s and infra %s", newMC.Name, target[workerPool], target[infraPool])

	// --- Pause mid-rollout: nodes already targeted finish, no new one is targeted.
	kubetest.EventuallyProgress(t, stallTimeout, fmt.Sprintf("%d worker nodes targeted", pauseAfter), func() kubetest.Progress {
		got := targeted(listNodes(t), poolOf, workerPool, target[workerPool])
		return kubetest.Progress{Done: len(got) >= pauseAfter, Mark: strconv.Itoa(len(got)), State: fmt.Sprintf("targeted so far: %v", got)}
	})
	out := mcotui(t, "pause", workerPool)
	if !strings.Contains(out, "machineconfigpool.machineconfiguration.openshift.io/worker paused") {
		t.Fatalf("mcotui pause worker printed %q", out)
	}
	logf("mcotui pause worker: %s", strings.TrimSpace(out))
	var frozen []string
	kubetest.EventuallyProgress(t, stallTimeout, "the worker nodes targeted before the pause to finish", func() kubetest.Progress {
		nodes := listNodes(t)
		frozen = targeted(nodes, poolOf, workerPool, target[workerPool])
		var busy []string
		for _, n := range frozen {
			if !rollout.DoneAt(nodes[n], target[workerPool]) {
				busy = append(busy, n)
			}
		}
		return kubetest.Progress{Done: len(busy) == 0, Mark: fmt.Sprintf("%d/%d", len(busy), len(frozen)), State: fmt.Sprintf("still updating: %v", busy)}
	})
	kubetest.Eventually(t, time.Minute, "the worker pool's status to say it is paused", func() (bool, string) {
		p := getPool(t, workerPool)
		c := rollout.FindCondition(&p.Status, mcfgv1.MachineConfigPoolUpdating)
		want := "Pool is paused; will not update to MachineConfig " + target[workerPool]
		return c != nil && c.Status == corev1.ConditionFalse && c.Message == want, fmt.Sprintf("Updating = %+v", c)
	})
	logf("worker paused with %d nodes on the new config, all Done: %v", len(frozen), frozen)
	// The finished updates above woke the controller on the paused pool: the watch's
	// history shows, at the end, that it targeted no node from the pause to the resume.
	out = mcotui(t, "resume", workerPool)
	logf("mcotui resume worker: %s", strings.TrimSpace(out))

	// --- Kill the leader mid-rollout; another controller takes over, and a new process
	// takes the killed one's place. Then the next leader is killed too, so that the
	// rollout is finished by a controller started after it began. Both kills come
	// before the degraded node's part, which takes as long as the agent's retries and
	// the looks of `mcotui status` need: on a loaded machine, the worker pool was all
	// targeted by then, and the second kill left its successor nothing to write.
	var killed []string
	killLeader := func(afterTargets int, replacement string) {
		t.Helper()
		kubetest.EventuallyProgress(t, stallTimeout, fmt.Sprintf("%d worker nodes targeted", afterTargets), func() kubetest.Progress {
			got := targeted(listNodes(t), poolOf, workerPool, target[workerPool])
			return kubetest.Progress{Done: len(got) >= afterTargets, Mark: strconv.Itoa(len(got)), State: fmt.Sprintf("targeted: %d", len(got))}
		})
		lease, err := env.Kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, install.LeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leader := ptr.Deref(lease.Spec.HolderIdentity, "")
		victim, ok := ctrls[leader]
		if !ok || slices.Contains(killed, leader) {
			t.Fatalf("the Lease is held by %q, not by a running controller of the test (killed: %v)", leader, killed)
		}
		if err := victim.kill(); err != nil {
			t.Fatal(err)
		}
		killed = append(killed, leader)
		logf("SIGKILLed the leader %s mid-rollout (%d worker nodes targeted)", leader, len(targeted(listNodes(t), poolOf, workerPool, target[workerPool])))
		ctrls[replacement] = startController(t, logDir, leaseNamespace, replacement)
		logf("started %s in its place", replacement)
	}
	killLeader(len(frozen)+3, "ctrl-3")
	killLeader(len(frozen)+12, "ctrl-4")

	// --- The degraded node.
	// The reason is read with the state: each retry of the agent sets the node Working
	// and clears it until the retry fails again.
	var reason string
	kubetest.Eventually(t, 2*time.Minute, degradedNode+" to refuse the update", func() (bool, string) {
		n := listNodes(t)[degradedNode]
		reason = nodeanno.Reason(n)
		return nodeanno.Desired(n) == target[infraPool] && nodeanno.State(n) == nodeanno.StateDegraded,
			fmt.Sprintf("annotations %v", n.Annotations)
	})
	if !strings.Contains(reason, rolloutDir+" is a symbolic link on the host") || !strings.Contains(reason, "nothing was written") {
		t.Errorf("%s's reason %q does not say that %s is a symbolic link and nothing was written", degradedNode, reason, rolloutDir)
	}
	logf("%s degraded: %s", degradedNode, reason)
	kubetest.Eventually(t, time.Minute, degradedNode+"'s MachineConfigNode NodeDegraded=True", func() (bool, string) {
		mcn := listMCNs(t)[degradedNode]
		if mcn == nil {
			return false, "no MachineConfigNode"
		}
		c, _ := phase.Find(mcn.Status.Conditions, phase.NodeDegraded)
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "symbolic link"), fmt.Sprintf("NodeDegraded = %+v", c)
	})
	kubetest.Eventually(t, time.Minute, "the infra pool's NodeDegraded condition to name "+degradedNode, func() (bool, string) {
		p := getPool(t, infraPool)
		c := rollout.FindCondition(&p.Status, mcfgv1.MachineConfigPoolNodeDegraded)
		return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "Node "+degradedNode+" is reporting: "),
			fmt.Sprintf("NodeDegraded = %+v", c)
	})
	// Each retry of the agent starts by writing Updated=False, which (MCO's rule, see
	// phase.Apply) resets NodeDegraded until the retry fails again: the node reads
	// degraded between retries, so a user may need to look twice. The windows grow with
	// the agent's backoff (5 s doubling to agent.DefaultMaxBackoff, 60 s): the limit lets
	// the backoff reach its ceiling and then a few full windows pass, so that a look of
	// two `mcotui status` runs fits in one however slow a loaded machine makes them.
	looks := 0
	kubetest.Eventually(t, 2*time.Minute+4*agent.DefaultMaxBackoff, "mcotui status to show "+degradedNode+" degraded", func() (bool, string) {
		looks++
		return statusShowsDegraded(t, degradedNode, target[infraPool])
	})
	logf("mcotui status shows %s degraded (at look %d); the pool's NodeDegraded names it", degradedNode, looks)
	if entries, err := os.ReadDir(outside); err != nil || len(entries) > 0 {
		t.Fatalf("the refused update wrote through the symbolic link: %v %v", entries, err)
	}

	// The repair: the link becomes a directory; the agent's retry then succeeds.
	link := filepath.Join(machines[degradedNode].dir, rolloutDir)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(link, 0o755); err != nil {
		t.Fatal(err)
	}
	logf("repaired %s's host", degradedNode)

	// --- The end: both pools updated.
	kubetest.EventuallyProgress(t, stallTimeout, "both pools Updated at the new configs", func() kubetest.Progress {
		return poolsProgress(t, target)
	})
	logf("both pools Updated")

	mcps := tables(kubectl(t, "get", "mcp", workerPool, infraPool)) // other tests leave pools of their own
	if len(mcps) != 1 || len(mcps[0]) != 2 {
		t.Fatalf("kubectl get mcp: want one table of two pools, got %v", mcps)
	}
	for _, row := range mcps[0] {
		if row["UPDATED"] != "True" || row["UPDATING"] != "False" || row["DEGRADED"] != "False" || row["CONFIG"] != target[row["NAME"]] {
			t.Errorf("kubectl get mcp: pool %s reads %v; want UPDATED True, UPDATING False, DEGRADED False at %s", row["NAME"], row, target[row["NAME"]])
		}
	}
	logf("kubectl get mcp: %v", mcps[0])

	nodes := listNodes(t)
	for _, n := range names {
		node, m := nodes[n], machines[n]
		want := target[poolOf[n]]
		if nodeanno.Current(node) != want || nodeanno.Desired(node) != want || nodeanno.State(node) != nodeanno.StateDone || node.Spec.Unschedulable {
			t.Errorf("node %s: current %q, desired %q, state %q, unschedulable %t; want current = desired = %s, Done, schedulable",
				n, nodeanno.Current(node), nodeanno.Desired(node), nodeanno.State(node), node.Spec.Unschedulable, want)
		}
		if diffs := m.checkFiles(filesOf(poolOf[n], true)); len(diffs) > 0 {
			t.Errorf("node %s: the host's files differ from %s: %s", n, want, strings.Join(diffs, "; "))
		}
		// One reboot per node: the new file needs one, and a refused update reboots
		// nothing.
		if r := m.logind.Reboots(); r != 1 {
			t.Errorf("node %s rebooted %d times, want once", n, r)
		}
	}
	logf("every node Done at its pool's new config, its host's files equal to it, rebooted once")

	// --- What the watcher saw.
	stopAgents()
	stopWatch()
	<-watchDone
	writes, leases, violations, peak, changes, degradedMCNs := hist.checked(t)
	logf("maxUnavailable violations: %d over %d recorded changes; peak unavailable: worker %d (max %s), infra %d (max %s)",
		violations, changes, peak[workerPool], workerMaxUnavailable.String(), peak[infraPool], infraMaxUnavailable.String())
	if !degradedMCNs[degradedNode] {
		t.Errorf("the watcher never saw %s's MachineConfigNode NodeDegraded=True", degradedNode)
	}
	if others := slices.DeleteFunc(slices.Sorted(maps.Keys(degradedMCNs)), func(n string) bool { return n == degradedNode }); len(others) > 0 {
		t.Errorf("nodes reported NodeDegraded=True besides %s: %v", degradedNode, others)
	}

	ids := map[string]bool{}
	for id := range ctrls {
		ids[id] = true
	}
	byWriter, problems := checkDrivers(writes, leases, ids, map[string]bool{target[workerPool]: true, target[infraPool]: true})
	for _, p := range problems {
		t.Error(p)
	}
	during, pausedAt, resumedAt, problem := targetedWhilePaused(writes, hist.pauseChanges(), poolOf, workerPool, target[workerPool])
	if problem != "" {
		t.Error(problem)
	}
	for _, w := range during {
		t.Errorf("node %s got the worker pool's target %s at resourceVersion %d, while the pool was paused (paused at resourceVersion %d, resumed at %d)",
			w.node, w.to, w.rv, pausedAt, resumedAt)
	}
	if problem == "" && len(during) == 0 {
		logf("no worker node targeted while the pool was paused (resourceVersions %d..%d)", pausedAt, resumedAt)
	}
	var holders []string
	for _, l := range leases {
		if len(holders) == 0 || holders[len(holders)-1] != l.holder {
			holders = append(holders, l.holder)
		}
	}
	var drivers []string
	for id, ws := range byWriter {
		drivers = append(drivers, fmt.Sprintf("%s %d nodes (resourceVersions %d..%d)", id, len(ws), ws[0].rv, ws[len(ws)-1].rv))
	}
	sort.Strings(drivers)
	logf("Lease holders in order: %v; targets written by: %s", holders, strings.Join(drivers, ", "))
	total := 0
	for _, ws := range byWriter {
		total += len(ws)
	}
	if total != len(names) {
		t.Errorf("%d desiredConfig writes to the new configs, want one per node (%d)", total, len(names))
	}
	finishers := total
	for _, k := range killed {
		if len(byWriter[k]) == 0 {
			t.Errorf("the killed leader %s wrote no target: it was not driving when killed", k)
		}
		finishers -= len(byWriter[k])
	}
	if finishers == 0 {
		t.Errorf("every target was written by the killed leaders %v: the controllers started in their place did not finish the rollout", killed)
	}
}

// installMcotui sets the cluster up as `mcotui install` does, once for all the tests: the
// namespace of the Lease, the RBAC and the admission policies. The agents run under
// them, each on a token bound to a pod on its node (machine.connect).
func installMcotui(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", leaseNamespace, err)
	}
	var manifests bytes.Buffer
	if err := deploy.Write(&manifests, deploy.Options{Namespace: leaseNamespace, Image: "ghcr.io/mcotui/mcotui:e2e", Version: "e2e"}); err != nil {
		t.Fatal(err)
	}
	apply := env.KubectlCommand(ctx, "apply", "-f", "-")
	apply.Stdin = &manifests
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply the install manifests: %v\n%s", err, out)
	}
}

// startMachines brings up one machine per name: each host is installed with its pool's
// rendered config (files), and its node joins already annotated with it, as MCO's
// machine-config-server does when a machine boots from the pool's Ignition config,
// with the labels of labelsOf besides the hostname and OS. Once kwok has made every
// node Ready, each machine's agent runs. stopAgents stops them and waits; the test's
// cleanup does too.
func startMachines(t *testing.T, names []string, poolOf, rendered map[string]string,
	labelsOf func(node string) map[string]string, files func(node string) []file) (machines map[string]*machine, stopAgents func()) {
	t.Helper()
	ctx := t.Context()
	machines = map[string]*machine{}
	for _, n := range names {
		machines[n] = newMachine(t, ctx, n, poolOf[n])
		machines[n].layDown(t, files(n))
	}
	if err := env.StartKwok(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		labels := map[string]string{corev1.LabelHostname: n, corev1.LabelOSStable: "linux"}
		maps.Copy(labels, labelsOf(n))
		cfg := rendered[poolOf[n]]
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: labels, Annotations: map[string]string{
			kubetest.KwokNodeAnnotation: "fake",
			nodeanno.CurrentConfigKey:   cfg, nodeanno.DesiredConfigKey: cfg, nodeanno.StateKey: nodeanno.StateDone,
		}}}
		if _, err := env.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", n, err)
		}
	}
	kubetest.EventuallyProgress(t, stallTimeout, "every node Ready (kwok)", func() kubetest.Progress {
		var notReady []string
		nodes := listNodes(t)
		for _, n := range names {
			if nodes[n] == nil || !rollout.Ready(nodes[n]) {
				notReady = append(notReady, n)
			}
		}
		return kubetest.Progress{Done: len(notReady) == 0, Mark: strconv.Itoa(len(notReady)), State: fmt.Sprintf("not Ready: %v", notReady)}
	})

	// The agents and their cluster side stop when the test says, not when t.Context
	// ends: the cleanup below stops them in order. Registered after the machines' own
	// cleanups, it runs before them, so the agents stop before their buses do.
	clusterCtx, disconnect := context.WithCancel(context.Background())
	agentCtx, cancelAgents := context.WithCancel(context.Background())
	var agents sync.WaitGroup
	stopAgents = func() {
		cancelAgents()
		agents.Wait()
	}
	t.Cleanup(func() {
		stopAgents()
		disconnect()
		if t.Failed() {
			dumpMachines(t, machines)
		}
	})
	var connectWG sync.WaitGroup
	connectErrs := make([]error, len(names))
	for i, n := range names {
		connectWG.Go(func() { connectErrs[i] = machines[n].connect(clusterCtx) })
	}
	connectWG.Wait()
	for _, err := range connectErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		agents.Go(func() { machines[n].run(t, agentCtx) })
	}
	return machines, stopAgents
}

func roleLabel(pool string) string { return "node-role.kubernetes.io/" + pool }

// filesOf is what a node of pool has on disk: its base config, and after the rollout
// the new file.
func filesOf(pool string, rolledOut bool) []file {
	out := slices.Clone(workerBase)
	if pool == infraPool {
		out = append(out, infraBase...)
	}
	if rolledOut {
		out = append(out, rolloutFile...)
	}
	return out
}

// machineConfig is a MachineConfig of role writing files.
func machineConfig(t *testing.T, name, role string, files []file) *mcfgv1.MachineConfig {
	t.Helper()
	c := mctest.Config{Role: role}
	for _, f := range files {
		c.Files = append(c.Files, mctest.File{Path: f.path, Data: f.data, Mode: int(f.mode)})
	}
	return mctest.MachineConfig(t, name, c)
}

// awaitRendered waits for the controller to point the pool at a rendered config other
// than old, and returns its name.
func awaitRendered(t *testing.T, pool, old string) string {
	t.Helper()
	var name string
	kubetest.Eventually(t, time.Minute, "pool "+pool+" rendered", func() (bool, string) {
		p := getPool(t, pool)
		name = p.Spec.Configuration.Name
		return name != "" && name != old, fmt.Sprintf("spec.configuration.name %q, conditions %v", name, p.Status.Conditions)
	})
	return name
}

// poolsUpdated says whether every pool reads Updated at its config in want, counting
// every node.
func poolsUpdated(t *testing.T, want map[string]string) (bool, string) {
	var waiting []string
	for pool, cfg := range want {
		p := getPool(t, pool)
		c := rollout.FindCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated)
		if c == nil || c.Status != corev1.ConditionTrue || p.Status.Configuration.Name != cfg || p.Status.UpdatedMachineCount != p.Status.MachineCount || p.Status.MachineCount == 0 {
			waiting = append(waiting, fmt.Sprintf("%s: machines %d, updated %d, unavailable %d, degraded %d, status.configuration %q, Updated %+v",
				pool, p.Status.MachineCount, p.Status.UpdatedMachineCount, p.Status.UnavailableMachineCount, p.Status.DegradedMachineCount, p.Status.Configuration.Name, c))
		}
	}
	sort.Strings(waiting)
	return len(waiting) == 0, strings.Join(waiting, "; ")
}

// poolsProgress is poolsUpdated as EventuallyProgress reads it: the mark is how many
// nodes are targeted at and done at the configs in want, and each pool's count of
// updated machines, which grow as the rollout goes on (a pool's conditions may flap
// while a degraded node retries, which is no progress).
func poolsProgress(t *testing.T, want map[string]string) kubetest.Progress {
	ok, state := poolsUpdated(t, want)
	targets := map[string]bool{}
	for _, cfg := range want {
		targets[cfg] = true
	}
	desired, done := 0, 0
	var inFlight []string // what a stalled wait's reader needs: the nodes it waits on
	for _, n := range listNodes(t) {
		if targets[nodeanno.Desired(n)] {
			desired++
			if rollout.DoneAt(n, nodeanno.Desired(n)) {
				done++
			} else {
				inFlight = append(inFlight, fmt.Sprintf("%s (state %q, current %s, reason %q, unschedulable %t)",
					n.Name, nodeanno.State(n), nodeanno.Current(n), n.Annotations[nodeanno.ReasonKey], n.Spec.Unschedulable))
			}
		}
	}
	if len(inFlight) > 0 {
		slices.Sort(inFlight)
		state += "; targeted and not done: " + strings.Join(inFlight, ", ")
	}
	mark := []string{fmt.Sprintf("targeted %d, done %d", desired, done)}
	pools := slices.Sorted(maps.Keys(want))
	for _, pool := range pools {
		p := getPool(t, pool)
		mark = append(mark, fmt.Sprintf("%s:%d/%d:%s", pool, p.Status.UpdatedMachineCount, p.Status.MachineCount, p.Status.Configuration.Name))
	}
	return kubetest.Progress{Done: ok, Mark: strings.Join(mark, " "), State: state}
}

// targeted are the nodes of pool whose desiredConfig is cfg, sorted.
func targeted(nodes map[string]*corev1.Node, poolOf map[string]string, pool, cfg string) []string {
	var out []string
	for name, n := range nodes {
		if poolOf[name] == pool && nodeanno.Desired(n) == cfg {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// statusShowsDegraded says whether `mcotui status` tells a user that node is degraded,
// and if not, what it shows instead: the table's pool row reads DEGRADED with one
// degraded machine and the node's row is not updated at desired; -o json carries the
// node's MachineConfigNode with NodeDegraded=True.
func statusShowsDegraded(t *testing.T, node, desired string) (bool, string) {
	t.Helper()
	out := mcotui(t, "status", infraPool)
	tabs := tables(out)
	// While a rollout is under way the tables are followed by its estimate.
	if _, est, ok := strings.Cut(out, "\nEstimated time remaining:\n"); ok && len(tabs) == 3 {
		if !strings.HasPrefix(est, "  "+infraPool+": ") {
			t.Fatalf("mcotui status infra: the estimate does not name the pool:\n%s", out)
		}
		tabs = tabs[:2]
	}
	if len(tabs) != 2 || len(tabs[0]) != 1 {
		t.Fatalf("mcotui status infra: want a pool table of one row and a node table, got %v", tabs)
	}
	if p := tabs[0][0]; p["NAME"] != infraPool || p["DEGRADED"] != "True" || p["DEGRADEDMACHINECOUNT"] != "1" {
		return false, fmt.Sprintf("mcotui status infra: pool row %v; want DEGRADED True, DEGRADEDMACHINECOUNT 1", p)
	}
	i := slices.IndexFunc(tabs[1], func(row map[string]string) bool { return row["NAME"] == node })
	if i < 0 {
		return false, fmt.Sprintf("mcotui status infra: no row for %s in %v", node, tabs[1])
	}
	if row := tabs[1][i]; row["UPDATED"] != "False" || row["DESIREDCONFIG"] != desired {
		return false, fmt.Sprintf("mcotui status infra: node row %v; want UPDATED False, DESIREDCONFIG %s", row, desired)
	}

	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(mcotui(t, "status", infraPool, "-o", "json")), &list); err != nil {
		t.Fatalf("mcotui status infra -o json: %v", err)
	}
	for _, raw := range list.Items {
		var mcn mcfgv1.MachineConfigNode
		if err := json.Unmarshal(raw, &mcn); err != nil || mcn.Kind != "MachineConfigNode" || mcn.Name != node {
			continue
		}
		c, _ := phase.Find(mcn.Status.Conditions, phase.NodeDegraded)
		return c.Status == metav1.ConditionTrue, fmt.Sprintf("mcotui status infra -o json: %s's NodeDegraded = %+v", node, c)
	}
	return false, fmt.Sprintf("mcotui status infra -o json: no MachineConfigNode %s", node)
}

func listNodes(t *testing.T) map[string]*corev1.Node {
	t.Helper()
	list, err := env.Kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func listMCNs(t *testing.T) map[string]*mcfgv1.MachineConfigNode {
	t.Helper()
	list, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*mcfgv1.MachineConfigNode, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func getPool(t *testing.T, name string) *mcfgv1.MachineConfigPool {
	t.Helper()
	p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dumpMachines logs, for a failure's reader, the agent logs of the nodes that are not
// Done at their desired config (at most five).
func dumpMachines(t *testing.T, machines map[string]*machine) {
	list, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list nodes: %v", err)
		return
	}
	shown := 0
	for _, n := range list.Items {
		if rollout.Done(&n) || machines[n.Name] == nil || shown >= 5 {
			continue
		}
		shown++
		t.Logf("node %s: annotations %v, unschedulable %t; agent log ends:\n%s", n.Name, n.Annotations, n.Spec.Unschedulable, machines[n.Name].logTail(30))
	}
}

// awaitInstalled waits, on progress, until the agent of every node of names has
// reported it Updated and each pool of rendered is Updated at its config there.
func awaitInstalled(t *testing.T, names []string, rendered map[string]string) {
	t.Helper()
	kubetest.EventuallyProgress(t, stallTimeout, "every agent reporting its node up to date, and the pools Updated", func() kubetest.Progress {
		mcns := listMCNs(t)
		var waiting []string
		for _, n := range names {
			if mcns[n] == nil {
				waiting = append(waiting, n)
			} else if c, ok := phase.Find(mcns[n].Status.Conditions, phase.Updated); !ok || c.Status != metav1.ConditionTrue {
				waiting = append(waiting, n)
			}
		}
		if len(waiting) > 0 {
			return kubetest.Progress{Mark: strconv.Itoa(len(waiting)), State: fmt.Sprintf("no MachineConfigNode with Updated=True for %v", waiting)}
		}
		return poolsProgress(t, rendered)
	})
}

// stepLog returns t.Logf with each line stamped by the seconds since the test began, so
// that a slow step reads from the log.
func stepLog(t *testing.T) func(format string, args ...any) {
	began := time.Now()
	return func(format string, args ...any) {
		t.Helper()
		t.Logf("[%6.1fs] "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
}
