package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// FieldManager names mcotui's controller in managedFields, and is the default field
// manager of the driver.
const FieldManager = "mcotui-controller"

// Event reasons of the rollout loop besides rollout.EventReason (SetDesiredConfig).
const (
	reasonPoolMembership = "NodeInSeveralPools"
	reasonInvalidRollout = "InvalidRollout"
)

// driverOptions tune a driver. The zero value is usable.
type driverOptions struct {
	// FieldManager names the writer in the nodes' managedFields.
	// Default FieldManager; the TUI passes its own so that a node's history says who
	// drove it.
	FieldManager string
	// Recorder receives the SetDesiredConfig event of each step on the pool. nil sends
	// no events.
	Recorder record.EventRecorder
	// Logger receives a line per targeted node. Default: discard.
	Logger *slog.Logger
	// MachineConfigNodes, when set, is the cache the members' MachineConfigNodes are
	// read from: when their update finished (health gates) and their PinnedImageSets.
	// The driver writes none: a MachineConfigNode is its agent's, spec and status, as
	// MCO's daemon writes its own (see kube.TargetNode).
	MachineConfigNodes mcfglisters.MachineConfigNodeLister
	// Nodes and Pools, when set together with MachineConfigNodes, are the caches the
	// driver plans from (Sync): no read of the API server per step. The
	// driver's record of its own writes makes up for a cache that lags them (see
	// ownWrites). Sync needs them; without them only the tests' step (export_test.go)
	// plans, from the API server.
	Nodes corelisters.NodeLister
	Pools mcfglisters.MachineConfigPoolLister
	// Clock times the pool's status conditions and expires writes whose outcome is
	// unknown, and is the time the pools' maintenance windows are read at. Default: the
	// real clock.
	Clock clock.PassiveClock
	// Alerts is the Prometheus the pools' alert gates ask (policy.AlertsGateKey). nil:
	// a pool with an alert gate is held, saying that no Prometheus is configured.
	Alerts kube.AlertSource
	// Requeue, when set, is asked to sync the pool again after a while though nothing
	// changes: when its maintenance window opens or closes, a soak ends, a gate that no
	// informer follows (an alert) is to be looked at again, or a held-back status is
	// due (StatusInterval). It should count time on Clock.
	Requeue func(pool string, after time.Duration)
	// StatusInterval, with Requeue, coalesces the pool status writes of Sync that only
	// move the machine counts (a node Done, one more updated): such a change is
	// written at most once per StatusInterval per pool, and when Sync holds one back it
	// calls Requeue to have the pool synced again once the interval is over, so the
	// status is never staler than that. A change of anything else (conditions,
	// configuration, machine or degraded count) is written at once, so the Updated and
	// Degraded a user or script waits on are never held back. With 2 s agents the
	// status was otherwise written once per node Done, a quarter of the controller's
	// writes.
	StatusInterval time.Duration
	// OnTargeted, when set, is called for each node whose new desired config the API
	// server accepted (the controller's targets metric).
	OnTargeted func(pool, node string)
	// BackgroundTargets, with Requeue, makes Sync write its step's targets in the
	// background rather than wait for them: each target is recorded as written (it
	// counts as unavailable, as a write whose outcome is unknown does) before its
	// patch is sent, so Sync returns at once and the pool's next sync, which the
	// next Done asks for, plans on it while its writes are in flight. A Done had
	// otherwise waited for the round trips of the sync before it (its nodes' patches)
	// before its slot could be given. A patch
	// the API server refused (a Conflict: the node moved on) is forgotten and the pool
	// requeued, with a backoff that grows while its targets keep failing. Wait waits
	// for the writes in flight.
	// Sync's pool status write goes to the background likewise; while it is in
	// flight no other is sent, and once it answers the pool is synced again.
	BackgroundTargets bool
	// Retry, when set, is asked to sync the pool again after a while, counted on the
	// real clock, when a background write failed (the backoff grows while they keep
	// failing). Default: Requeue.
	Retry func(pool string, after time.Duration)
	// OSImageStreams and MachineConfigs, when both set, let the pool's
	// status.osImageStream name the stream it runs (osstream.PoolStatus), as MCO's node
	// controller does where OSStreams is on. Without them the field is left as it is.
	OSImageStreams mcfglisters.OSImageStreamLister
	MachineConfigs mcfglisters.MachineConfigLister
	// StageParallel is how many nodes of a pool stage a new OS image at once before
	// their drain, for pools whose rollout.StageParallelKey does not say. Default
	// rollout.DefaultStageParallel.
	StageParallel int
}

// driver drives pools' rollouts one step at a time, as MCO's node controller does,
// planning from informer caches (driverOptions.Nodes): the controller's rollout loop
// and a DriveSession (the TUI's and `rollout --wait`'s, when no controller holds the
// Lease) drive pools the same way, through Sync. It is unexported: its audiences
// reach it through Run and DriveSession; a one-off look is ReadPool. Its only state is its record of its own
// writes that the caches do not show yet. Only one driver may drive a pool at a time;
// Run's Lease sees to that for controllers. Its methods may be called concurrently,
// for different pools.
type driver struct {
	clients      *kube.Clients
	nodes        corelisters.NodeLister
	pools        mcfglisters.MachineConfigPoolLister
	mcns         mcfglisters.MachineConfigNodeLister
	fieldManager string
	recorder     record.EventRecorder
	log          *slog.Logger
	clock        clock.PassiveClock
	alerts       kube.AlertSource
	requeue      func(string, time.Duration)
	onTargeted   func(pool, node string)
	streams      mcfglisters.OSImageStreamLister // with mcs; see driverOptions.OSImageStreams
	mcs          mcfglisters.MachineConfigLister

	ownNodes *ownWrites[*corev1.Node]
	ownPools *ownWrites[*mcfgv1.MachineConfigPool]

	// memos keep, per pool, what Sync read of each node object (rollout.Memo): a
	// sync then reads only the nodes that changed since the last. Per pool, since a
	// Memo forgets what a round did not read.
	memoMu sync.Mutex
	memos  map[string]*rollout.Memo

	statusInterval time.Duration
	statusMu       sync.Mutex
	statusWritten  map[string]time.Time // per pool, when Sync last wrote its status
	statusBusy     map[string]bool      // per pool with a background status write in flight: whether a sync had another to write meanwhile

	// hooksSucceeded are the hook Jobs (namespace/name) seen succeeded: a success is
	// final, so they are not read again at every sync (hooks.go).
	hooksSucceeded sync.Map
	// hooksStopped are the before-drain hook runs seen failed (pool/node to
	// hookjob.Run): their nodes are stopped (rollout.Options.Stopped) until the Job is
	// deleted to run again; each is read again at the pool's syncs (hooks.go).
	hooksStopped sync.Map
	// hooksTold are the stopped nodes (pool/node/config) whose failed hook has been an
	// Event on the node, so that it is told once.
	hooksTold sync.Map

	// Background targets (driverOptions.BackgroundTargets): the writes in flight,
	// the bound on their requests, and the backoff of a pool whose targets fail.
	background bool
	inflight   sync.WaitGroup
	writeSlots chan struct{}
	failures   workqueue.TypedRateLimiter[string]
	retry      func(string, time.Duration)

	// stageParallel is driverOptions.StageParallel; osImages the rendered configs'
	// OS images the staging reads.
	stageParallel int
	osImages      osImages
}

// newDriver returns a driver writing through clients.
func newDriver(clients *kube.Clients, opts driverOptions) *driver {
	d := &driver{
		clients: clients, mcns: opts.MachineConfigNodes, fieldManager: opts.FieldManager, recorder: opts.Recorder, log: opts.Logger,
		clock: opts.Clock, alerts: opts.Alerts, requeue: opts.Requeue, onTargeted: opts.OnTargeted, statusWritten: map[string]time.Time{},
		memos: map[string]*rollout.Memo{},
	}
	if opts.StatusInterval > 0 && opts.Requeue != nil {
		d.statusInterval = opts.StatusInterval
	}
	if opts.BackgroundTargets && opts.Requeue != nil {
		d.background = true
		d.writeSlots = make(chan struct{}, maxConcurrentTargets)
		d.statusBusy = map[string]bool{}
		d.failures = workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second)
		d.retry = opts.Retry
		if d.retry == nil {
			d.retry = opts.Requeue
		}
	}
	if opts.OSImageStreams != nil && opts.MachineConfigs != nil {
		d.streams, d.mcs = opts.OSImageStreams, opts.MachineConfigs
	}
	if opts.Nodes != nil && opts.Pools != nil && opts.MachineConfigNodes != nil {
		d.nodes, d.pools = opts.Nodes, opts.Pools
	}
	if d.fieldManager == "" {
		d.fieldManager = FieldManager
	}
	d.stageParallel = opts.StageParallel
	if d.stageParallel <= 0 {
		d.stageParallel = rollout.DefaultStageParallel
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	d.ownNodes = newOwnWrites[*corev1.Node](d.clock)
	d.ownPools = newOwnWrites[*mcfgv1.MachineConfigPool](d.clock)
	return d
}

// cached is the pool named pool and its members from the caches, each object replaced
// by the driver's own write of it where the cache does not show that write yet: what
// Sync decides on. Membership is read through memo (nil: afresh). NotFound when the
// cache has no such pool.
func (d *driver) cached(pool string, memo *rollout.Memo) (PoolState, error) {
	p, err := d.pools.Get(pool)
	if err != nil {
		return PoolState{}, err
	}
	p = d.ownPools.latest(p)
	all, err := d.pools.List(labels.Everything())
	if err != nil {
		return PoolState{}, err
	}
	d.ownPools.latestAll(all)
	var nodes []*corev1.Node
	sel, selErr := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
	switch {
	case selErr != nil || p.Spec.NodeSelector == nil || sel.Empty():
		// The pool selects no node.
	case memo != nil:
		// Every node: the memo remembers which are the pool's, where matching the
		// selector again was a third of a sync on a thousand nodes.
		nodes, err = d.nodes.List(labels.Everything())
	default:
		// The lister's selector filters the cache's nodes without copying them;
		// Members then settles which of them the pool owns.
		nodes, err = d.nodes.List(sel)
	}
	if err != nil {
		return PoolState{}, err
	}
	d.ownNodes.latestAll(nodes)
	members, problems := memo.Members(p, all, nodes)
	return PoolState{Pool: p, Nodes: members, Problems: problems}, nil
}

// stepOn carries out step on st, which it brings up to date with its writes: in the
// background when background is set (driverOptions.BackgroundTargets), with st
// holding each target as assumed.
func (d *driver) stepOn(ctx context.Context, st *PoolState, step rollout.Step, background bool) (rollout.Step, error) {
	if len(step.Targets) == 0 {
		return step, nil
	}
	index := make(map[string]int, len(st.Nodes))
	for i, n := range st.Nodes {
		index[n.Name] = i
	}
	if background {
		d.stepInBackground(ctx, st, step, index)
		return step, nil
	}
	// The targets are written concurrently (each its node's patch): a step's targets
	// are independent, each decided on its own node's resourceVersion, and written one
	// after another they held the slot freed by a Done for the round trips of every
	// target before them.
	errs := make([]error, len(step.Targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxConcurrentTargets)
	for i, name := range step.Targets {
		j := index[name]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = d.target(ctx, st.Pool, step.Target, st.Nodes[j], func(n *corev1.Node) { st.Nodes[j] = n })
		})
	}
	wg.Wait()
	var done []string
	for i, name := range step.Targets {
		if errs[i] == nil {
			done = append(done, name)
		}
	}
	d.event(st.Pool, rollout.Step{Target: step.Target, Targets: done})
	if err := errors.Join(errs...); err != nil {
		return step, fmt.Errorf("machineconfigpool %s: %w", st.Pool.Name, err)
	}
	return step, nil
}

// maxConcurrentTargets bounds the writes of one step in flight at once: a wave of a
// large maxUnavailable must not open hundreds of requests, which the client's rate
// limiter would hold back anyway.
const maxConcurrentTargets = 16

// stepInBackground records each of step's targets as assumed, in st and in the
// driver's record of its own writes, and writes them in the background
// (driverOptions.BackgroundTargets): at most maxConcurrentTargets requests at once
// across the driver, then the step's Event. A target that failed requeues the pool
// after the pool's backoff.
func (d *driver) stepInBackground(ctx context.Context, st *PoolState, step rollout.Step, index map[string]int) {
	pool := st.Pool
	type write struct {
		t       kube.Target
		assumed *corev1.Node
	}
	writes := make([]write, len(step.Targets))
	for i, name := range step.Targets {
		j := index[name]
		node := st.Nodes[j]
		t, assumed := d.targetOf(pool, step.Target, node)
		// Before the patch is sent: the next sync may begin before it answers.
		d.ownNodes.assume(node.ResourceVersion, assumed)
		st.Nodes[j] = assumed
		writes[i] = write{t, assumed}
	}
	d.inflight.Go(func() {
		errs := make([]error, len(writes))
		var wg sync.WaitGroup
		for i, w := range writes {
			wg.Go(func() {
				d.writeSlots <- struct{}{}
				defer func() { <-d.writeSlots }()
				errs[i] = d.writeTarget(ctx, pool, w.t, w.assumed, func(*corev1.Node) {})
			})
		}
		wg.Wait()
		var done []string
		for i, name := range step.Targets {
			if errs[i] == nil {
				done = append(done, name)
			}
		}
		d.event(pool, rollout.Step{Target: step.Target, Targets: done})
		err := errors.Join(errs...)
		switch {
		case err == nil:
			d.failures.Forget(pool.Name)
		case ctx.Err() == nil:
			wait := d.failures.When(pool.Name)
			d.log.Info("target failed; planning again", "pool", pool.Name, "after", wait, "err", err)
			d.retry(pool.Name, wait)
		}
	})
}

// Wait waits until the targets that Sync writes in the background
// (driverOptions.BackgroundTargets) have been written or have failed: at the end of a
// leadership term, before the Lease is released.
func (d *driver) Wait() { d.inflight.Wait() }

// targetOf is the write that gives node the pool's target config desired, and the node
// as it will be once written.
func (d *driver) targetOf(pool *mcfgv1.MachineConfigPool, desired string, node *corev1.Node) (kube.Target, *corev1.Node) {
	t := kube.Target{Node: node, Desired: desired, FieldManager: d.fieldManager}
	// The target's patch takes the UpdateInProgress taint off too, when the node
	// will no longer need it: one write rather than two.
	assumed := node.DeepCopy()
	if assumed.Annotations == nil {
		assumed.Annotations = map[string]string{}
	}
	assumed.Annotations[nodeanno.DesiredConfigKey] = desired
	if taints, changed := rollout.UpdateTaints(pool, assumed); changed {
		t.SetTaints, t.Taints = true, taints
		assumed.Spec.Taints = taints
	}
	return t, assumed
}

// target gives node the pool's target config desired (kube.TargetNodeWith) and records
// the writes; set receives what the node is now believed to be, the API server's
// answer or, when the outcome is unknown, the node as it would be had the patch landed.
func (d *driver) target(ctx context.Context, pool *mcfgv1.MachineConfigPool, desired string, node *corev1.Node, set func(*corev1.Node)) error {
	t, assumed := d.targetOf(pool, desired, node)
	return d.writeTarget(ctx, pool, t, assumed, set)
}

// writeTarget writes t and records what it wrote; assumed is the node as it is once
// written. A write whose outcome is unknown leaves the node assumed; one refused
// forgets the assumption, when it is still the one made for t.
func (d *driver) writeTarget(ctx context.Context, pool *mcfgv1.MachineConfigPool, t kube.Target, assumed *corev1.Node, set func(*corev1.Node)) error {
	node, desired, name := t.Node, t.Desired, t.Node.Name
	written, err := kube.TargetNodeWith(ctx, d.clients, t)
	switch {
	case err == nil:
		d.ownNodes.wrote(node.ResourceVersion, written)
		set(written)
	case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err):
		// The patch may have landed: count the node as targeted until the cache
		// says either way.
		d.ownNodes.assume(node.ResourceVersion, assumed)
		set(assumed)
	default:
		// It did not land. A background target was assumed before it was sent.
		d.ownNodes.forget(assumed)
	}
	if err != nil {
		return err
	}
	d.log.Info("targeted node", "pool", pool.Name, "node", name, "config", desired)
	if d.onTargeted != nil {
		d.onTargeted(pool.Name, name)
	}
	return nil
}

// cachedMachineConfigNode is the node's MachineConfigNode from the cache, or nil.
func (d *driver) cachedMachineConfigNode(name string) *mcfgv1.MachineConfigNode {
	if d.mcns == nil {
		return nil
	}
	mcn, err := d.mcns.Get(name)
	if err != nil {
		return nil
	}
	return mcn
}

func (d *driver) event(pool *mcfgv1.MachineConfigPool, step rollout.Step) {
	if d.recorder != nil && len(step.Targets) > 0 {
		d.recorder.Event(pool, corev1.EventTypeNormal, rollout.EventReason, step.EventMessage())
	}
}

// Sync does one pass of the rollout of the pool named pool from the driver's caches,
// as MCO's node controller's syncMachineConfigPool does: it takes the next step (unless
// mayStep, when not nil, says no after looking at the members), keeps the
// UpdateInProgress taints, and writes the
// pool's status once, when it changed. It returns the pool and its members as they
// are after its writes. The driver must have caches (driverOptions.Nodes).
func (d *driver) Sync(ctx context.Context, pool string, mayStep func(PoolState) bool) (PoolState, rollout.Step, error) {
	// The phases' times, at Debug: where a sync's time goes, which is how long the
	// next Done of the pool may wait behind it (BenchmarkRollout's -bench.rollout-trace).
	var tr syncTrace
	tr.begin(d.clock)
	defer func() { tr.log(d.log, pool) }()
	memo := d.memo(pool)
	memo.Round()
	st, err := d.cached(pool, memo)
	tr.mark("read")
	if err != nil {
		if apierrors.IsNotFound(err) {
			d.dropMemo(pool)
		}
		return PoolState{}, rollout.Step{}, err
	}
	p := st.Pool
	for _, pr := range st.Problems {
		if d.recorder != nil {
			d.recorder.Event(p, corev1.EventTypeWarning, reasonPoolMembership, pr.Error())
		}
	}
	var errs []error
	if p.Spec.Configuration.Name == "" {
		// Not rendered yet: the render loop says why in RenderDegraded.
		return st, rollout.Step{}, errors.Join(errs...)
	}
	now := d.clock.Now()
	opts, hold := d.policyOptions(ctx, st, now)
	if _, err := rollout.MaxUnavailable(p, len(st.Nodes)); err != nil {
		// No target and no taint until it is fixed; the status says Degraded, with the
		// reason (rollout.Status), and the hold's event names it.
		hold = policyHold{Hold: rollout.Hold{Reason: reasonInvalidRollout, Message: err.Error() + "; no node is targeted until it is fixed", Invalid: true}}
	}
	var hooks hookGate
	if !hold.Invalid {
		// The pool's hooks (hooks.go): a hook that runs or failed holds the plan.
		var err error
		if hooks, err = d.hooks(ctx, &st, opts.Policy, hold.Reason != "" || st.Pool.Spec.Paused); err != nil {
			// Hooks not known to have run hold the rollout as hooks running do.
			errs = append(errs, err)
			hooks.hold = rollout.Hold{Reason: rollout.HeldHookRunning, Message: "cannot run the pool's hooks: " + err.Error(), Recheck: hookPoll}
		}
		if h := hooks.hold; h.Reason != "" && (hold.Reason == "" || h.Reason == rollout.HeldHookFailed) {
			hold.Hold, opts.Gate = h, h.Message
		}
		// Nodes a failed hook of their own stopped: left out, counted against
		// maxUnavailable; the others go on.
		opts.Stopped = hooks.stopped
	}
	tr.mark("policy")
	var step rollout.Step
	stepping := !hold.Invalid && (mayStep == nil || mayStep(st))
	if stepping {
		var err error
		if opts.Stage, err = d.stageOptions(ctx, st, targetName(st, opts)); err != nil {
			// Which nodes must stage first is unknown: no node is targeted.
			if d.recorder != nil {
				d.recorder.Event(p, corev1.EventTypeWarning, reasonInvalidRollout, err.Error())
			}
			errs = append(errs, err)
			stepping = false
		}
	}
	if stepping {
		// The plan reads no taints: it is made before they are written, so that the
		// step's own targets need no taint write of their own (below).
		opts.Brief = true // a sync acts on the targets alone
		if step, err = memo.Plan(st.Pool, memo.PlanningView(st.Nodes), opts); err != nil {
			// The plan itself failed: the pool is invalid (its maxUnavailable).
			if d.recorder != nil {
				d.recorder.Event(p, corev1.EventTypeWarning, reasonInvalidRollout, err.Error())
			}
			stepping, step = false, rollout.Step{}
		}
	}
	if h := hooks.filterTargets(ctx, &step); h.Reason != "" && hold.Reason == "" {
		hold.Hold = h
	}
	if !hold.Invalid {
		d.tellStopped(st, hooks.stoppedNow(), &hold.Hold)
	}
	tr.mark("plan")
	// Taints before targets, as MCO's syncMachineConfigPool: a node that waits for the
	// target carries UpdateInProgress before any node of the pool is given the target.
	// A node this step targets is left out: its target's patch sets its final taints,
	// where the taint added here would be taken off again at once (a write per node of
	// the first step, and the first step waited for every other node's).
	if !hold.Invalid {
		if err := d.syncTaints(ctx, memo, p, st.Nodes, step.Targets); err != nil {
			errs = append(errs, err)
		}
	}
	tr.mark("taints")
	if stepping {
		if err := d.writeStage(ctx, &st, step); err != nil {
			errs = append(errs, err)
		}
		d.warnUnstaged(st, step)
		if step, err = d.stepOn(ctx, &st, step, d.background); err != nil {
			errs = append(errs, err)
		}
		tr.targets = len(step.Targets)
		tr.mark("step")
	}
	hold.Held = step.Held
	if err := d.writeStatus(ctx, memo, &st, now, hold); err != nil {
		errs = append(errs, err)
	}
	tr.mark("status")
	if hold.Recheck > 0 && d.requeue != nil {
		d.requeue(p.Name, hold.Recheck)
	}
	return st, step, errors.Join(errs...)
}

// memo is the pool's rollout.Memo.
func (d *driver) memo(pool string) *rollout.Memo {
	d.memoMu.Lock()
	defer d.memoMu.Unlock()
	m, ok := d.memos[pool]
	if !ok {
		m = rollout.NewMemo()
		d.memos[pool] = m
	}
	return m
}

// dropMemo forgets the memo of a pool that is gone.
func (d *driver) dropMemo(pool string) {
	d.memoMu.Lock()
	defer d.memoMu.Unlock()
	delete(d.memos, pool)
}

// rolloutLoop is the controller's rollout: per pool, a Sync of the driver from the
// informers' caches.
type rolloutLoop struct {
	driver *driver
}

func (l *rolloutLoop) sync(ctx context.Context, name string) error {
	_, _, err := l.driver.Sync(ctx, name, nil)
	if apierrors.IsNotFound(err) {
		return nil // the pool is gone
	}
	return err
}

// writeStatus writes the pool's status as rollout.Status computes it over st's
// members (read through memo), with the RolloutHeld condition of hold, when it
// differs from what the pool has, and brings st.Pool up to date. A change of the
// machine counts alone waits for the pool's status interval
// (driverOptions.StatusInterval), the pool requeued for when it is over. A hold that
// begins or changes its reason is an Event on the pool.
func (d *driver) writeStatus(ctx context.Context, memo *rollout.Memo, st *PoolState, now time.Time, hold policyHold) error {
	pool := st.Pool
	view := memo.PlanningView(st.Nodes)
	status := memo.Status(pool, view, metav1.NewTime(now))
	d.setPinnedSynchronizer(pool, &status, view)
	d.setStreamStatus(&status)
	setHoldCondition(&status, pool.Status.Conditions, hold, hasPolicy(pool), metav1.NewTime(now))
	if sameStatus(status, pool.Status) {
		return nil
	}
	if d.background && d.statusInFlight(pool.Name) {
		return nil // it requeues the pool when it is over, to see what is left to write
	}
	if wait := d.statusWait(pool.Name, now); wait > 0 && onlyCountsDiffer(status, pool.Status) {
		d.requeue(pool.Name, wait)
		d.log.Debug("pool status held back", "pool", pool.Name, "for", wait, "updated", status.UpdatedMachineCount, "unavailable", status.UnavailableMachineCount)
		return nil
	}
	if hold.Reason != "" && d.recorder != nil && !sameHold(pool.Status.Conditions, hold) {
		kind := corev1.EventTypeNormal
		if hold.Invalid {
			kind = corev1.EventTypeWarning
		}
		d.recorder.Event(pool, kind, hold.Reason, hold.Message)
	}
	updated := pool.DeepCopy()
	updated.Status = status
	if d.background {
		// As the targets: the next sync need not wait for the status's round trip.
		// Until it answers, syncs write no status of the pool; then the pool is
		// synced again, for what changed meanwhile.
		d.statusMu.Lock()
		d.statusBusy[pool.Name] = false
		d.statusWritten[pool.Name] = now
		d.statusMu.Unlock()
		d.inflight.Go(func() {
			err := d.updateStatus(ctx, pool, updated)
			d.statusMu.Lock()
			missed := d.statusBusy[pool.Name]
			delete(d.statusBusy, pool.Name)
			d.statusMu.Unlock()
			switch {
			case err == nil:
				d.failures.Forget(pool.Name + "/status")
				if missed {
					d.requeue(pool.Name, 0)
				}
			case ctx.Err() == nil:
				wait := d.failures.When(pool.Name + "/status")
				d.log.Info("status write failed; retrying", "pool", pool.Name, "after", wait, "err", err)
				d.retry(pool.Name, wait)
			}
		})
		return nil
	}
	if err := d.updateStatus(ctx, pool, updated); err != nil {
		return err
	}
	d.statusMu.Lock()
	d.statusWritten[pool.Name] = now
	d.statusMu.Unlock()
	st.Pool = updated
	return nil
}

// updateStatus writes updated's status over pool and records the write; updated gets
// what the API server answered.
func (d *driver) updateStatus(ctx context.Context, pool, updated *mcfgv1.MachineConfigPool) error {
	written, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: d.fieldManager})
	if err != nil {
		return fmt.Errorf("update status of machineconfigpool %s: %w", pool.Name, err)
	}
	d.ownPools.wrote(pool.ResourceVersion, written)
	d.log.Debug("wrote pool status", "pool", pool.Name, "updated", written.Status.UpdatedMachineCount, "unavailable", written.Status.UnavailableMachineCount)
	*updated = *written
	return nil
}

// statusInFlight reports whether a background status write of the pool is in flight,
// and if so marks that a sync had a status to write meanwhile: the pool is synced
// again once it answers. Only then: a sync after each status write was a third of a
// 5,000-node rollout's syncs, each reading every node.
func (d *driver) statusInFlight(pool string) bool {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	busy, ok := d.statusBusy[pool]
	if ok && !busy {
		d.statusBusy[pool] = true
	}
	return ok
}

// statusWait is how long a status change of the pool's counts alone is held back at
// now: what is left of the status interval since its last write, or 0.
func (d *driver) statusWait(pool string, now time.Time) time.Duration {
	if d.statusInterval <= 0 {
		return 0
	}
	d.statusMu.Lock()
	last, ok := d.statusWritten[pool]
	d.statusMu.Unlock()
	if !ok {
		return 0
	}
	return max(last.Add(d.statusInterval).Sub(now), 0)
}

// onlyCountsDiffer reports whether two pool statuses differ in nothing but the
// updated, ready and unavailable machine counts: the progress of a rollout, which may
// wait, rather than its start, end or failure, which may not.
func onlyCountsDiffer(a, b mcfgv1.MachineConfigPoolStatus) bool {
	a.UpdatedMachineCount, a.ReadyMachineCount, a.UnavailableMachineCount = 0, 0, 0
	b.UpdatedMachineCount, b.ReadyMachineCount, b.UnavailableMachineCount = 0, 0, 0
	return sameStatus(a, b)
}

// syncTaints keeps the UpdateInProgress taint on the pool's members whose desired
// config differs from the pool's target, and off the others (rollout.UpdateTaints),
// as MCO's node controller does. Each write carries the resourceVersion of the node it
// was decided on, so that it never undoes a taint someone else wrote meanwhile. The
// nodes written are replaced in members by what the API server answered.
func (d *driver) syncTaints(ctx context.Context, memo *rollout.Memo, pool *mcfgv1.MachineConfigPool, members []*corev1.Node, skip []string) error {
	// The writes are independent, one per node: at most maxConcurrentTargets at once,
	// since a pool's new target taints every node at once, 5,000 writes one after
	// another on a large pool.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, maxConcurrentTargets)
	for i, n := range members {
		taints, changed := memo.UpdateTaints(pool, n)
		if !changed || slices.Contains(skip, n.Name) {
			continue
		}
		if taints == nil {
			taints = []corev1.Taint{}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			written, err := d.writeTaints(ctx, pool, n, taints)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			members[i] = written
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeTaints sets the taints of node n, decided on its resourceVersion, and records
// the write.
func (d *driver) writeTaints(ctx context.Context, pool *mcfgv1.MachineConfigPool, n *corev1.Node, taints []corev1.Taint) (*corev1.Node, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return nil, fmt.Errorf("machineconfigpool %s: taints of node %s: %w", pool.Name, n.Name, err)
	}
	written, err := d.clients.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: d.fieldManager})
	if err != nil {
		return nil, fmt.Errorf("machineconfigpool %s: set the %s taint of node %s: %w", pool.Name, rollout.UpdateInProgressTaintKey, n.Name, err)
	}
	d.ownNodes.wrote(n.ResourceVersion, written)
	d.log.Info("updated taints", "pool", pool.Name, "node", n.Name, "updateInProgress", nodeanno.Desired(n) != pool.Spec.Configuration.Name)
	return written, nil
}

// sameStatus reports whether two pool statuses are the same as the API server stores
// them: in JSON, where an empty list and none are alike and times have seconds. A
// status that differs only in Go (a nil list against an empty one) would otherwise be
// written at every sync, and, since each write is a watch event, sync again at once.
func sameStatus(a, b mcfgv1.MachineConfigPoolStatus) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
