package controller_test

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// nodeRecorder watches a pool's nodes and records every change: the most nodes
// unavailable at once (core/rollout's rule), and the order in which nodes were first
// given the target config.
type nodeRecorder struct {
	pool, target string

	mu          sync.Mutex
	nodes       map[string]*corev1.Node
	max         int
	maxAt       string
	targetOrder []string
	events      int
	// tainted are the nodes seen with the UpdateInProgress taint while their desired
	// config was not the recorded target.
	tainted map[string]bool
}

func recordNodes(t *testing.T, pool string) *nodeRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &nodeRecorder{pool: pool, nodes: map[string]*corev1.Node{}, tainted: map[string]bool{}}
	list, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: roleLabel(pool)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		r.nodes[list.Items[i].Name] = &list.Items[i]
	}
	w, err := env.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: roleLabel(pool), ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			r.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(r.nodes, n.Name)
			} else {
				r.observe(n)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return r
}

// expect sets the config whose targeting order is recorded.
func (r *nodeRecorder) expect(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = target
}

func (r *nodeRecorder) observe(n *corev1.Node) {
	old := r.nodes[n.Name]
	r.nodes[n.Name] = n
	r.events++
	if r.target != "" && nodeanno.Desired(n) != r.target && rollout.HasUpdateInProgressTaint(n) {
		r.tainted[n.Name] = true
	}
	if r.target != "" && nodeanno.Desired(n) == r.target && (old == nil || nodeanno.Desired(old) != r.target) {
		r.targetOrder = append(r.targetOrder, n.Name)
	}
	var unavailable []string
	for _, m := range r.nodes {
		if rollout.Unavailable(m) {
			unavailable = append(unavailable, m.Name)
		}
	}
	if len(unavailable) > r.max {
		slices.Sort(unavailable)
		r.max, r.maxAt = len(unavailable), strings.Join(unavailable, ",")
	}
}

// taintedNodes are the nodes seen with the UpdateInProgress taint while they waited
// for the recorded target, by name.
func (r *nodeRecorder) taintedNodes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.tainted {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (r *nodeRecorder) report() (maxUnavailable int, at string, order []string, events int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max, r.maxAt, slices.Clone(r.targetOrder), r.events
}

// waitRolledOut waits until every node runs target and the pool says Updated. It
// fails when no node and no pool count has moved for stall, not after a budget for the
// whole rollout, which a loaded machine would miss.
func waitRolledOut(t *testing.T, pool, target string, nodes []string, stall time.Duration) {
	t.Helper()
	kubetest.EventuallyProgress(t, stall, "pool "+pool+" rolled out to "+target, func() kubetest.Progress {
		var behind []string
		for _, name := range nodes {
			n := getNode(t, name)
			if nodeanno.Current(n) != target || nodeanno.State(n) != nodeanno.StateDone {
				behind = append(behind, fmt.Sprintf("%s(current=%s desired=%s state=%s)", name, nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n)))
			}
		}
		p := getPool(t, pool)
		c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated)
		ok := len(behind) == 0 && c != nil && c.Status == corev1.ConditionTrue && p.Status.Configuration.Name == target
		mark := fmt.Sprintf("%v %d/%d %s", behind, p.Status.UpdatedMachineCount, p.Status.MachineCount, p.Status.Configuration.Name)
		return kubetest.Progress{Done: ok, Mark: mark, State: fmt.Sprintf("behind: %v; pool: %s", behind, condString(p))}
	})
}

// TestRolloutRespectsMaxUnavailable rolls a pool of five nodes in two zones out with
// maxUnavailable 2 and a test double of the agent: never more than two nodes are
// unavailable at any change of any node, nodes are targeted zone by zone and oldest
// first, the controller writes no MachineConfigNode, and at the end the
// pool's status counts and conditions say Updated, as kubectl shows them.
func TestRolloutRespectsMaxUnavailable(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "roll", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-roll", "roll", "/etc/roll", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	// Zone b's nodes are older than zone a's, so that zone order and age order differ.
	nodes := createNodes(t, "roll", old, "zone-b", "zone-b", "zone-a", "zone-a", "")
	startFakeAgent(t, "roll", 700*time.Millisecond)
	rec := recordNodes(t, "roll")
	startController(t, "lease-roll", "roll-a")
	waitRolledOut(t, "roll", old, nodes, 30*time.Second)

	v2 := machineConfig(t, "00-roll", "roll", "/etc/roll", "v2")
	target := expectedRendered(t, pool, v2)
	rec.expect(target)
	applyMC(t, v2)
	waitRolledOut(t, "roll", target, nodes, 60*time.Second)

	maxSeen, at, order, events := rec.report()
	t.Logf("%d node changes; at most %d unavailable (%s); targeted in order %v", events, maxSeen, at, order)
	if maxSeen > 2 {
		t.Errorf("%d nodes were unavailable at once (%s); maxUnavailable is 2", maxSeen, at)
	}
	if maxSeen < 2 {
		t.Errorf("at most %d node was unavailable at once: the rollout did not use maxUnavailable 2", maxSeen)
	}
	// Zone a first (oldest first within it), then zone b, then the node without a zone.
	// The targets of one step are written at once, so two nodes targeted together may
	// land in either order: the order is checked wave by wave.
	inWaves := func(order []string) [][]string {
		var out [][]string
		for i, n := range []int{2, 2, 1} {
			start := []int{0, 2, 4}[i]
			if len(order) < start+n {
				return nil
			}
			w := slices.Clone(order[start : start+n])
			slices.Sort(w)
			out = append(out, w)
		}
		return out
	}
	if want := [][]string{{"roll-2", "roll-3"}, {"roll-0", "roll-1"}, {"roll-4"}}; len(order) != 5 || !slices.EqualFunc(inWaves(order), want, slices.Equal[[]string]) {
		t.Errorf("targeted in order %v, want zone a %v, then zone b %v, then %v", order, want[0], want[1], want[2])
	}
	// Once the pool's target moved, every node that waited was tainted
	// UpdateInProgress:PreferNoSchedule until it was targeted (the taints are written
	// before the step that targets nodes); the first wave, targeted in the sync that
	// saw the target move, did not wait (its target's patch carries its final
	// taints). None keeps the taint once updated.
	if got, waited := rec.taintedNodes(), skipFirst(order, 2); !isSubset(waited, got) {
		t.Errorf("nodes tainted while they waited: %v, want every node that waited: %v", got, waited)
	}
	for _, name := range nodes {
		if n := getNode(t, name); rollout.HasUpdateInProgressTaint(n) {
			t.Errorf("node %s keeps the UpdateInProgress taint at the target: %v", name, n.Spec.Taints)
		}
	}

	// The MachineConfigNodes are the agents' (MCO's daemon writes its own, spec and
	// status); this test's agent writes none, so the controller wrote none either.
	for _, name := range nodes {
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("machineconfignode %s: err = %v, want none: the controller writes no MachineConfigNode", name, err)
		}
	}

	p := getPool(t, "roll")
	if s := p.Status; s.MachineCount != 5 || s.UpdatedMachineCount != 5 || s.ReadyMachineCount != 5 || s.UnavailableMachineCount != 0 || s.DegradedMachineCount != 0 {
		t.Errorf("status counts: %s", condString(p))
	}
	if c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated); c == nil || c.Message != "All nodes are updated with MachineConfig "+target {
		t.Errorf("Updated = %+v", c)
	}
	out, err := env.KubectlCommand(ctx, "get", "mcp", "roll").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get mcp: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get mcp roll:\n%s", out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	want := map[string]string{"NAME": "roll", "CONFIG": target, "UPDATED": "True", "UPDATING": "False", "DEGRADED": "False",
		"MACHINECOUNT": "5", "READYMACHINECOUNT": "5", "UPDATEDMACHINECOUNT": "5", "DEGRADEDMACHINECOUNT": "0"}
	for i, h := range header {
		if w, ok := want[h]; ok && (i >= len(row) || row[i] != w) {
			t.Errorf("kubectl get mcp: %s is %q, want %q\n%s", h, row[i], w, out)
		}
	}

	evs, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=roll,reason=" + rollout.EventReason})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || strings.Contains(e.Message, "MachineConfig: "+target)
	}
	if !found {
		t.Errorf("no %s event on the pool names %s", rollout.EventReason, target)
	}
}

// TestPausedPoolGetsNoTargets: a paused pool is rendered but no node gets the new
// config, and its status says so in MCO's words; once resumed the rollout completes.
func TestPausedPoolGetsNoTargets(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "pause", nil, false)
	v1 := machineConfig(t, "00-pause", "pause", "/etc/pause", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "pause", old, "", "")
	startFakeAgent(t, "pause", 100*time.Millisecond)
	reg := prometheus.NewRegistry()
	startController(t, "lease-pause", "pause-a", withMetrics(reg))
	waitRolledOut(t, "pause", old, nodes, 30*time.Second)

	setPaused(t, "pause", true)
	v2 := machineConfig(t, "00-pause", "pause", "/etc/pause", "v2")
	target := expectedRendered(t, pool, v2)
	applyMC(t, v2)
	kubetest.Eventually(t, 30*time.Second, "paused pool rendered, Updating False", func() (bool, string) {
		p := getPool(t, "pause")
		c := poolCondition(p, mcfgv1.MachineConfigPoolUpdating)
		return p.Spec.Configuration.Name == target && c != nil && c.Status == corev1.ConditionFalse &&
			c.Message == "Pool is paused; will not update to MachineConfig "+target, condString(p)
	})
	// One more reconciliation of the paused pool, after which a wrong target would be
	// there to see.
	settle(t, reg, "rollout", pokeNode(t, nodes[0]))
	for _, name := range nodes {
		if d := nodeanno.Desired(getNode(t, name)); d != old {
			t.Fatalf("node %s of the paused pool was targeted to %s", name, d)
		}
	}
	p := getPool(t, "pause")
	if c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated); c == nil || c.Status != corev1.ConditionFalse || p.Status.UpdatedMachineCount != 0 {
		t.Errorf("paused pool status: %s", condString(p))
	}

	setPaused(t, "pause", false)
	waitRolledOut(t, "pause", target, nodes, 30*time.Second)
	_ = ctx
}

// setPaused writes the pause as `mcotui pool pause` does: a merge patch of spec.paused,
// which the controller's status writes to the same pool cannot make conflict.
func setPaused(t *testing.T, pool string, paused bool) {
	t.Helper()
	if err := kube.SetPoolPaused(kubetest.Context(t), clients(t), pool, paused, "mcotui-test"); err != nil {
		t.Fatal(err)
	}
}

// TestDegradedNode: a node whose update fails makes the pool NodeDegraded and
// Degraded, with MCO's reason and message; the other nodes still update (a failed node
// takes no capacity); fresh nodes mcotui never configured are enrolled.
func TestDegradedNode(t *testing.T) {
	pool := createPool(t, "deg", ptr.To(intstr.FromString("50%")), false)
	v1 := machineConfig(t, "00-deg", "deg", "/etc/deg", "v1")
	target := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	// Unenrolled nodes: no annotations at all, as on a cluster mcotui was just
	// installed on.
	nodes := createNodes(t, "deg", "", "", "", "", "")
	startFakeAgent(t, "deg", 200*time.Millisecond, "deg-1")
	startController(t, "lease-deg", "deg-a")

	kubetest.Eventually(t, 60*time.Second, "pool degraded by deg-1, others updated", func() (bool, string) {
		p := getPool(t, "deg")
		nd := poolCondition(p, mcfgv1.MachineConfigPoolNodeDegraded)
		d := poolCondition(p, mcfgv1.MachineConfigPoolDegraded)
		ok := p.Status.DegradedMachineCount == 1 && p.Status.UpdatedMachineCount == 3 &&
			nd != nil && nd.Status == corev1.ConditionTrue && nd.Reason == "1 nodes are reporting degraded status on sync" &&
			nd.Message == `Node deg-1 is reporting: "boom"` && d != nil && d.Status == corev1.ConditionTrue
		return ok, condString(p)
	})
	for _, name := range nodes {
		if name == "deg-1" {
			continue
		}
		if n := getNode(t, name); nodeanno.Current(n) != target {
			t.Errorf("node %s runs %q, want %s", name, nodeanno.Current(n), target)
		}
	}
}

// TestLeaderElection: two controllers on one Lease never lead at the same time, only
// the leader writes desired configs, and when the leader is stopped mid-rollout the
// other takes over and finishes.
func TestLeaderElection(t *testing.T) {
	pool := createPool(t, "elect", nil, false)
	v1 := machineConfig(t, "00-elect", "elect", "/etc/elect", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "elect", old, "", "", "", "")
	startFakeAgent(t, "elect", 800*time.Millisecond)

	var mu sync.Mutex
	leading := map[string]bool{}
	var overlaps []string
	var terms []string
	observe := func(id string) func(*controller.Config) {
		return func(c *controller.Config) {
			c.OnLeading = func(on bool) {
				mu.Lock()
				defer mu.Unlock()
				if on {
					for other, l := range leading {
						if l {
							overlaps = append(overlaps, id+" started leading while "+other+" led")
						}
					}
					terms = append(terms, id)
				}
				leading[id] = on
			}
		}
	}
	a := startController(t, "lease-elect", "elect-a", observe("elect-a"))
	kubetest.Eventually(t, 20*time.Second, "elect-a leads", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return leading["elect-a"], fmt.Sprint(leading)
	})
	b := startController(t, "lease-elect", "elect-b", observe("elect-b"))
	waitRolledOut(t, "elect", old, nodes, 30*time.Second)

	v2 := machineConfig(t, "00-elect", "elect", "/etc/elect", "v2")
	target := expectedRendered(t, pool, v2)
	applyMC(t, v2)
	kubetest.Eventually(t, 30*time.Second, "the rollout has begun", func() (bool, string) {
		return nodeanno.Desired(getNode(t, nodes[0])) == target, "node 0 not targeted yet"
	})
	a.stop(t) // mid-rollout: three nodes still to go
	waitRolledOut(t, "elect", target, nodes, 60*time.Second)
	b.stop(t)

	mu.Lock()
	defer mu.Unlock()
	if len(overlaps) > 0 {
		t.Errorf("leaders overlapped: %v", overlaps)
	}
	if !slices.Equal(terms, []string{"elect-a", "elect-b"}) {
		t.Errorf("leadership terms %v, want elect-a then elect-b", terms)
	}
	// Each node's desiredConfig was written by a leader: elect-b finished the rollout.
	writers := map[string]bool{}
	for _, name := range nodes {
		for _, f := range getNode(t, name).ManagedFields {
			if strings.Contains(f.FieldsV1.GetRawString(), `"f:`+nodeanno.DesiredConfigKey+`"`) {
				writers[f.Manager] = true
			}
		}
	}
	if !writers["elect-b"] {
		t.Errorf("desiredConfig writers %v: elect-b never wrote one", writers)
	}
	for w := range writers {
		if w != "elect-a" && w != "elect-b" {
			t.Errorf("desiredConfig written by %q", w)
		}
	}
}

// TestRestartMidRollout: a controller stopped mid-rollout and started again finishes the
// rollout.
func TestRestartMidRollout(t *testing.T) {
	pool := createPool(t, "restart", nil, false)
	v1 := machineConfig(t, "00-restart", "restart", "/etc/restart", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "restart", old, "", "", "")
	startFakeAgent(t, "restart", 800*time.Millisecond)
	first := startController(t, "lease-restart", "restart-1")
	waitRolledOut(t, "restart", old, nodes, 30*time.Second)

	v2 := machineConfig(t, "00-restart", "restart", "/etc/restart", "v2")
	target := expectedRendered(t, pool, v2)
	applyMC(t, v2)
	kubetest.Eventually(t, 30*time.Second, "the rollout has begun", func() (bool, string) {
		return nodeanno.Desired(getNode(t, nodes[0])) == target, "node 0 not targeted yet"
	})
	first.stop(t)
	startController(t, "lease-restart", "restart-2")
	waitRolledOut(t, "restart", target, nodes, 60*time.Second)
}

// TestUpdateInProgressTaint: a node waiting for its pool's new config carries MCO's
// UpdateInProgress:PreferNoSchedule taint, as `kubectl describe node` shows it, and a
// node given the config does not; a paused pool's taints stay as they are, and a
// tainted node that is Done counts as available in the pool's status; once resumed and
// rolled out, no node keeps the taint.
func TestUpdateInProgressTaint(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "taint", nil, false)
	v1 := machineConfig(t, "00-taint", "taint", "/etc/taint", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "taint", old, "", "")
	reg := prometheus.NewRegistry()
	startController(t, "lease-taint", "taint-a", withMetrics(reg))
	waitRolledOut(t, "taint", old, nodes, 30*time.Second)
	for _, name := range nodes {
		if n := getNode(t, name); rollout.HasUpdateInProgressTaint(n) {
			t.Fatalf("node %s at its pool's config is tainted: %v", name, n.Spec.Taints)
		}
	}

	// No agent yet: taint-0 is given the new config and stays on it, taint-1 waits.
	v2 := machineConfig(t, "00-taint", "taint", "/etc/taint", "v2")
	target := expectedRendered(t, pool, v2)
	applyMC(t, v2)
	kubetest.Eventually(t, 30*time.Second, "taint-0 targeted and untainted, taint-1 tainted", func() (bool, string) {
		first, second := getNode(t, nodes[0]), getNode(t, nodes[1])
		ok := nodeanno.Desired(first) == target && !rollout.HasUpdateInProgressTaint(first) &&
			nodeanno.Desired(second) == old && rollout.HasUpdateInProgressTaint(second)
		return ok, fmt.Sprintf("taint-0 desired %s taints %v; taint-1 desired %s taints %v",
			nodeanno.Desired(first), first.Spec.Taints, nodeanno.Desired(second), second.Spec.Taints)
	})
	out, err := env.KubectlCommand(ctx, "describe", "node", nodes[1]).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl describe node: %v\n%s", err, out)
	}
	section := string(out)
	if i := strings.Index(section, "\nTaints:"); i >= 0 {
		section = section[i:]
		if j := strings.Index(section, "\nUnschedulable:"); j >= 0 {
			section = section[:j]
		}
	}
	if !strings.Contains(section, "UpdateInProgress:PreferNoSchedule") {
		t.Errorf("kubectl describe node %s: the Taints section lacks UpdateInProgress:PreferNoSchedule:\n%s", nodes[1], section)
	}

	setPaused(t, "taint", true)
	startFakeAgent(t, "taint", 100*time.Millisecond)
	kubetest.Eventually(t, 30*time.Second, "paused: taint-0 updated, nothing unavailable", func() (bool, string) {
		p := getPool(t, "taint")
		return rollout.DoneAt(getNode(t, nodes[0]), target) && p.Status.UpdatedMachineCount == 1 && p.Status.UnavailableMachineCount == 0, condString(p)
	})
	settle(t, reg, "rollout", pokeNode(t, nodes[1]))
	if n := getNode(t, nodes[1]); !rollout.HasUpdateInProgressTaint(n) || nodeanno.Desired(n) != old {
		t.Errorf("paused pool: taint-1 desired %s taints %v; want it left as it was, tainted", nodeanno.Desired(n), n.Spec.Taints)
	}

	setPaused(t, "taint", false)
	waitRolledOut(t, "taint", target, nodes, 30*time.Second)
	kubetest.Eventually(t, 10*time.Second, "no node keeps the taint", func() (bool, string) {
		var left []string
		for _, name := range nodes {
			if rollout.HasUpdateInProgressTaint(getNode(t, name)) {
				left = append(left, name)
			}
		}
		return len(left) == 0, fmt.Sprint("tainted: ", left)
	})
}

// isSubset reports whether every name of sub is in set.
func isSubset(sub, set []string) bool {
	for _, n := range sub {
		if !slices.Contains(set, n) {
			return false
		}
	}
	return true
}

// skipFirst is s without its first n names (none when it has fewer).
func skipFirst(s []string, n int) []string { return s[min(n, len(s)):] }
