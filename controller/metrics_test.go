package controller

import (
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// metricsFixture is a worker pool mid-update at now: three members, one Done on the new
// config, one Working and draining for 30 s, one targeted that no agent has reported on;
// and an infra node that is not a member.
func metricsFixture(t *testing.T, now time.Time) (mcfglisters.MachineConfigPoolLister, corelisters.NodeLister, mcfglisters.MachineConfigNodeLister) {
	t.Helper()
	pools := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	mcns := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(pools.Add(&mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
			Paused:       true,
		},
		Status: mcfgv1.MachineConfigPoolStatus{
			MachineCount: 3, ReadyMachineCount: 2, UpdatedMachineCount: 1, UnavailableMachineCount: 1,
			Conditions: []mcfgv1.MachineConfigPoolCondition{
				{Type: mcfgv1.MachineConfigPoolUpdated, Status: corev1.ConditionFalse},
				{Type: mcfgv1.MachineConfigPoolUpdating, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-90 * time.Second))},
			},
		},
	}))
	node := func(name, role, current, desired, state string) *corev1.Node {
		anns := map[string]string{nodeanno.CurrentConfigKey: current, nodeanno.DesiredConfigKey: desired}
		if state != "" {
			anns[nodeanno.StateKey] = state
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""}, Annotations: anns}}
	}
	must(nodes.Add(node("w1", "worker", "rendered-new", "rendered-new", nodeanno.StateDone)))
	must(nodes.Add(node("w2", "worker", "rendered-old", "rendered-new", nodeanno.StateWorking)))
	must(nodes.Add(node("w3", "worker", "rendered-old", "rendered-new", "")))
	must(nodes.Add(node("i1", "infra", "rendered-old", "rendered-old", nodeanno.StateDegraded)))
	draining := phase.Draining("drain-rendered-new", "uncordon-rendered-old")
	must(mcns.Add(&mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: "w2"},
		Status: mcfgv1.MachineConfigNodeStatus{Conditions: []metav1.Condition{{
			Type: string(draining.Type), Status: draining.Status, Message: draining.Message,
			LastTransitionTime: metav1.NewTime(now.Add(-30 * time.Second)),
		}}},
	}))
	return mcfglisters.NewMachineConfigPoolLister(pools), corelisters.NewNodeLister(nodes), mcfglisters.NewMachineConfigNodeLister(mcns)
}

// TestPoolMetrics: the leader's scrape shows each pool's counts as its status has them,
// its members by reported state, progress, how long it has been updating, the longest
// drain, and the nodes targeted that no agent took up yet; a standby shows no pool.
func TestPoolMetrics(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, clocktesting.NewFakePassiveClock(now))
	pools, nodes, mcns := metricsFixture(t, now)

	poolNames := []string{MetricPoolMachines, MetricPoolNodes, MetricPoolProgress, MetricPoolUpdating, MetricPoolPaused, MetricPoolLongestDrn, MetricPoolAwaitsAgent}
	if n, err := testutil.GatherAndCount(reg, poolNames...); err != nil || n != 0 {
		t.Fatalf("before leading: %d pool samples (%v), want none", n, err)
	}
	m.setLeading(true)
	m.observe(pools, nodes, mcns)
	want := `
# HELP mcotui_pool_longest_drain_seconds Seconds the longest drain in progress or blocked on a member of the pool has lasted (its Drained condition Unknown); 0 when none drains.
# TYPE mcotui_pool_longest_drain_seconds gauge
mcotui_pool_longest_drain_seconds{pool="worker"} 30
# HELP mcotui_pool_machines The pool's machine counts from its status, as ` + "`kubectl get mcp`" + ` shows them: total, ready, updated, unavailable, degraded.
# TYPE mcotui_pool_machines gauge
mcotui_pool_machines{count="degraded",pool="worker"} 0
mcotui_pool_machines{count="ready",pool="worker"} 2
mcotui_pool_machines{count="total",pool="worker"} 3
mcotui_pool_machines{count="unavailable",pool="worker"} 1
mcotui_pool_machines{count="updated",pool="worker"} 1
# HELP mcotui_pool_nodes The pool's nodes by the state their agent reports (machineconfiguration.openshift.io/state; None: no report yet).
# TYPE mcotui_pool_nodes gauge
mcotui_pool_nodes{pool="worker",state="Degraded"} 0
mcotui_pool_nodes{pool="worker",state="Done"} 1
mcotui_pool_nodes{pool="worker",state="None"} 1
mcotui_pool_nodes{pool="worker",state="Unreconcilable"} 0
mcotui_pool_nodes{pool="worker",state="Working"} 1
# HELP mcotui_pool_nodes_awaiting_agent Members whose desired config differs from their current one while their agent still reports Done or nothing: targeted, not yet taken up by an agent.
# TYPE mcotui_pool_nodes_awaiting_agent gauge
mcotui_pool_nodes_awaiting_agent{pool="worker"} 1
# HELP mcotui_pool_paused 1 while the pool is paused (spec.paused), else 0.
# TYPE mcotui_pool_paused gauge
mcotui_pool_paused{pool="worker"} 1
# HELP mcotui_pool_update_progress_ratio Updated machines over all machines of the pool (1 for an empty pool).
# TYPE mcotui_pool_update_progress_ratio gauge
mcotui_pool_update_progress_ratio{pool="worker"} 0.3333333333333333
# HELP mcotui_pool_updating_seconds Seconds since the pool's Updating condition turned True; 0 while it is not updating.
# TYPE mcotui_pool_updating_seconds gauge
mcotui_pool_updating_seconds{pool="worker"} 90
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), poolNames...); err != nil {
		t.Error(err)
	}
	if v := testutil.ToFloat64(m.leader); v != 1 {
		t.Errorf("leader while leading: %v", v)
	}

	m.setLeading(false)
	if n, err := testutil.GatherAndCount(reg, poolNames...); err != nil || n != 0 {
		t.Errorf("after the term: %d pool samples (%v), want none", n, err)
	}
	if v := testutil.ToFloat64(m.leader); v != 0 {
		t.Errorf("leader after the term: %v", v)
	}
}

// TestMetricsReady: ready as a standby and as a leader with synced caches, not before
// the cluster is checked, nor while the caches sync, nor once Run has returned.
func TestMetricsReady(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), nil)
	pools, nodes, mcns := metricsFixture(t, time.Now())
	steps := []struct {
		do    func()
		ready bool
		what  string
	}{
		{func() {}, false, "starting"},
		{func() { m.setState(stateStandby) }, true, "standby"},
		{func() { m.setLeading(true) }, false, "leading, caches syncing"},
		{func() { m.observe(pools, nodes, mcns) }, true, "leading, caches synced"},
		{func() { m.setLeading(false) }, true, "standby again"},
		{func() { m.setState(stateStopped) }, false, "stopped"},
		{func() { m.setState(stateStandby) }, false, "stopped stays stopped"},
	}
	for _, s := range steps {
		s.do()
		if err := m.Ready(); (err == nil) != s.ready {
			t.Errorf("%s: Ready() = %v, want ready %t", s.what, err, s.ready)
		}
	}
	var none *Metrics // Config.Metrics unset: every hook is a no-op
	none.setState(stateStandby)
	none.setLeading(true)
	none.observe(pools, nodes, mcns)
	none.targeted("worker")
	if none.QueueMetrics() != nil {
		t.Error("a nil Metrics gives queue metrics")
	}
}

// TestQueueMetricsAcrossTerms: the queues of a second leadership term, of the same names
// as the first's, report to the same series (a second registration would panic), and a
// standby has no queue depth.
func TestQueueMetricsAcrossTerms(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, nil)
	for term := 1; term <= 2; term++ {
		m.setLeading(true)
		q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "rollout", MetricsProvider: m.QueueMetrics()})
		q.Add("worker")
		q.Add("master")
		if d := testutil.ToFloat64(m.queue.depth.WithLabelValues("rollout")); d != 2 {
			t.Errorf("term %d: depth %v, want 2", term, d)
		}
		k, _ := q.Get()
		q.Done(k)
		if a := testutil.ToFloat64(m.queue.adds.WithLabelValues("rollout")); a != float64(2*term) {
			t.Errorf("term %d: adds %v, want %d", term, a, 2*term)
		}
		q.ShutDown()
		m.setLeading(false)
		if n, err := testutil.GatherAndCount(reg, "workqueue_depth"); err != nil || n != 0 {
			t.Errorf("term %d over: %d depth series (%v), want none", term, n, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"); err != nil || n != 2 {
		t.Errorf("latency series: %d (%v), want one of each for the rollout queue", n, err)
	}
}
