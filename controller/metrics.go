package controller

import (
	"errors"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
)

// Metric names, as docs/monitoring.md lists them.
const (
	MetricLeader          = "mcotui_controller_leader"
	MetricTargets         = "mcotui_controller_targets_total"
	MetricPoolMachines    = "mcotui_pool_machines"
	MetricPoolNodes       = "mcotui_pool_nodes"
	MetricPoolProgress    = "mcotui_pool_update_progress_ratio"
	MetricPoolUpdating    = "mcotui_pool_updating_seconds"
	MetricPoolPaused      = "mcotui_pool_paused"
	MetricPoolLongestDrn  = "mcotui_pool_longest_drain_seconds"
	MetricPoolAwaitsAgent = "mcotui_pool_nodes_awaiting_agent"
)

// NodeStateNone is the state label of a node without a state annotation: no agent has
// reported on it yet.
const NodeStateNone = "None"

// nodeStates are the values of mcotui_pool_nodes' state label; each has a series (at 0
// when no node is in it) so that alerts and dashboards need no absent().
var nodeStates = []string{nodeanno.StateDone, nodeanno.StateWorking, nodeanno.StateDegraded, nodeanno.StateUnreconcilable, NodeStateNone}

// Metrics are the controller's Prometheus metrics and what its /readyz reports. They
// are registered on a registry the caller owns (never the global default). The pool
// metrics are computed at scrape time from the leader's informer caches: a standby has
// none, so every pool series comes from the one leader.
//
// One Metrics outlives the leadership terms of a Run: each term hands it its caches
// (observe) and its queues get their metrics from QueueMetrics, whose series are
// created once and reused by the next term's queues.
type Metrics struct {
	clock   clock.PassiveClock
	leader  prometheus.Gauge
	targets *prometheus.CounterVec
	queue   *queueMetrics

	mu    sync.Mutex
	state string // see Ready
	pools mcfglisters.MachineConfigPoolLister
	nodes corelisters.NodeLister
	mcns  mcfglisters.MachineConfigNodeLister
}

// Run states for Ready.
const (
	stateStarting = "starting"
	stateStandby  = "standby"
	stateSyncing  = "syncing"
	stateLeading  = "leading"
	stateStopped  = "stopped"
)

// NewMetrics creates the metrics and registers them on reg. clock times the pools'
// updating and drain durations (nil: the real clock).
func NewMetrics(reg prometheus.Registerer, clk clock.PassiveClock) *Metrics {
	if clk == nil {
		clk = clock.RealClock{}
	}
	m := &Metrics{
		clock: clk,
		state: stateStarting,
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricLeader,
			Help: "1 while this controller holds the Lease and runs the loops, else 0.",
		}),
		targets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricTargets,
			Help: "Nodes given a new desired config by this controller, by pool.",
		}, []string{"pool"}),
		queue: newQueueMetrics(),
	}
	reg.MustRegister(m.leader, m.targets, poolCollector{m})
	m.queue.register(reg)
	return m
}

// QueueMetrics is the workqueue metrics provider for the controller's queues (client-go's
// workqueue_* metrics, labelled by queue name), passed to each queue rather than set
// globally with workqueue.SetProvider.
func (m *Metrics) QueueMetrics() workqueue.MetricsProvider {
	if m == nil {
		return nil
	}
	return m.queue
}

// Ready says whether the controller is ready: it has checked the cluster (no MCO, the
// MachineConfig APIs served) and is either a standby candidate for the Lease or the
// leader with synced caches. A leader whose caches are still syncing is not ready yet:
// it does not act on the cluster. Once Run has returned it is never ready again.
func (m *Metrics) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.state {
	case stateStandby, stateLeading:
		return nil
	case stateStarting:
		return errors.New("not ready: checking the cluster before running for the Lease")
	case stateSyncing:
		return errors.New("not ready: leading, informer caches not synced yet")
	}
	return errors.New("not ready: the controller has stopped")
}

func (m *Metrics) setState(s string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != stateStopped {
		m.state = s
	}
}

// setLeading records the start (true) or end of a leadership term.
func (m *Metrics) setLeading(leading bool) {
	if m == nil {
		return
	}
	if leading {
		m.leader.Set(1)
		m.setState(stateSyncing)
		return
	}
	m.leader.Set(0)
	m.observe(nil, nil, nil)
	m.queue.endTerm()
	m.setState(stateStandby)
}

// observe hands the pool metrics the caches of a term with synced caches, or nil at
// the end of the term.
func (m *Metrics) observe(pools mcfglisters.MachineConfigPoolLister, nodes corelisters.NodeLister, mcns mcfglisters.MachineConfigNodeLister) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools, m.nodes, m.mcns = pools, nodes, mcns
	if pools != nil && m.state != stateStopped {
		m.state = stateLeading
	}
}

// targeted counts nodes given a new desired config in pool.
func (m *Metrics) targeted(pool string) {
	if m != nil {
		m.targets.WithLabelValues(pool).Inc()
	}
}

var (
	descPoolMachines = prometheus.NewDesc(MetricPoolMachines,
		"The pool's machine counts from its status, as `kubectl get mcp` shows them: total, ready, updated, unavailable, degraded.",
		[]string{"pool", "count"}, nil)
	descPoolNodes = prometheus.NewDesc(MetricPoolNodes,
		"The pool's nodes by the state their agent reports (machineconfiguration.openshift.io/state; None: no report yet).",
		[]string{"pool", "state"}, nil)
	descPoolProgress = prometheus.NewDesc(MetricPoolProgress,
		"Updated machines over all machines of the pool (1 for an empty pool).",
		[]string{"pool"}, nil)
	descPoolUpdating = prometheus.NewDesc(MetricPoolUpdating,
		"Seconds since the pool's Updating condition turned True; 0 while it is not updating.",
		[]string{"pool"}, nil)
	descPoolPaused = prometheus.NewDesc(MetricPoolPaused,
		"1 while the pool is paused (spec.paused), else 0.",
		[]string{"pool"}, nil)
	descPoolDrain = prometheus.NewDesc(MetricPoolLongestDrn,
		"Seconds the longest drain in progress or blocked on a member of the pool has lasted (its Drained condition Unknown); 0 when none drains.",
		[]string{"pool"}, nil)
	descPoolAwaits = prometheus.NewDesc(MetricPoolAwaitsAgent,
		"Members whose desired config differs from their current one while their agent still reports Done or nothing: targeted, not yet taken up by an agent.",
		[]string{"pool"}, nil)
)

// poolCollector computes the pool metrics from the leader's caches at each scrape, so
// they are never older than the caches and cost nothing between scrapes.
type poolCollector struct{ m *Metrics }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPoolMachines, descPoolNodes, descPoolProgress, descPoolUpdating, descPoolPaused, descPoolDrain, descPoolAwaits} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	pools, nodes, mcns := c.m.pools, c.m.nodes, c.m.mcns
	c.m.mu.Unlock()
	if pools == nil {
		return // a standby, or a leader whose caches are not synced
	}
	all, err := pools.List(labels.Everything())
	if err != nil {
		return
	}
	allNodes, err := nodes.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.m.clock.Now()
	for _, p := range all {
		members, _ := rollout.Members(p, all, allNodes)
		for _, s := range poolSamples(p, members, mcns, now) {
			ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
		}
	}
}

// poolSample is one sample of a pool metric.
type poolSample struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

// poolSamples are the pool metrics' samples of p whose members are members, at now.
// mcns may be nil (no drain is seen then).
func poolSamples(p *mcfgv1.MachineConfigPool, members []*corev1.Node, mcns mcfglisters.MachineConfigNodeLister, now time.Time) []poolSample {
	st := p.Status
	out := []poolSample{
		{descPoolMachines, float64(st.MachineCount), []string{p.Name, "total"}},
		{descPoolMachines, float64(st.ReadyMachineCount), []string{p.Name, "ready"}},
		{descPoolMachines, float64(st.UpdatedMachineCount), []string{p.Name, "updated"}},
		{descPoolMachines, float64(st.UnavailableMachineCount), []string{p.Name, "unavailable"}},
		{descPoolMachines, float64(st.DegradedMachineCount), []string{p.Name, "degraded"}},
	}
	progress := 1.0
	if st.MachineCount > 0 {
		progress = float64(st.UpdatedMachineCount) / float64(st.MachineCount)
	}
	out = append(out, poolSample{descPoolProgress, progress, []string{p.Name}})
	updating := 0.0
	for _, c := range st.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdating && c.Status == corev1.ConditionTrue {
			updating = max(0, now.Sub(c.LastTransitionTime.Time).Seconds())
		}
	}
	out = append(out, poolSample{descPoolUpdating, updating, []string{p.Name}})
	paused := 0.0
	if p.Spec.Paused {
		paused = 1
	}
	out = append(out, poolSample{descPoolPaused, paused, []string{p.Name}})

	counts := make(map[string]int, len(nodeStates))
	awaiting := 0
	longest := 0.0
	for _, n := range members {
		s := nodeanno.State(n)
		if s == "" {
			s = NodeStateNone
		}
		counts[s]++
		if d := nodeanno.Desired(n); d != "" && d != nodeanno.Current(n) && (s == nodeanno.StateDone || s == NodeStateNone) {
			awaiting++
		}
		if mcns == nil {
			continue
		}
		if mcn, err := mcns.Get(n.Name); err == nil {
			if c, ok := phase.Find(mcn.Status.Conditions, phase.Drained); ok && c.Status == metav1.ConditionUnknown {
				longest = max(longest, now.Sub(c.LastTransitionTime.Time).Seconds())
			}
		}
	}
	for _, s := range nodeStates {
		out = append(out, poolSample{descPoolNodes, float64(counts[s]), []string{p.Name, s}})
	}
	out = append(out,
		poolSample{descPoolAwaits, float64(awaiting), []string{p.Name}},
		poolSample{descPoolDrain, longest, []string{p.Name}})
	return out
}

// queueMetrics are client-go's workqueue metrics under their usual names (as
// k8s.io/component-base registers them), one series per queue name. Each series is
// created on the first queue of its name and reused by later ones: a new leadership
// term makes new queues of the same names.
type queueMetrics struct {
	depth, longest, unfinished *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func newQueueMetrics() *queueMetrics {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12) // 10ns to 1000s, as Kubernetes'
	return &queueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of the workqueue."}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by the workqueue."}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in the workqueue before being requested.", Buckets: buckets}, []string{"name"}),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from the workqueue takes.", Buckets: buckets}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads."}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for the workqueue been running."}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by the workqueue."}, []string{"name"}),
	}
}

// endTerm drops the gauges of the term's queues, which are shut down now: a standby
// has no queue depth. The next term's queues create them anew.
func (q *queueMetrics) endTerm() {
	q.depth.Reset()
	q.unfinished.Reset()
	q.longest.Reset()
}

func (q *queueMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(q.depth, q.adds, q.latency, q.work, q.unfinished, q.longest, q.retries)
}

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}

func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.work.WithLabelValues(name)
}

func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}

func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
