package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/alertmanager"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/notify"
)

// Event reasons of the phase watch.
const (
	reasonSilenceFailed   = "SilenceFailed"
	reasonPhaseTimesWrite = "PhaseTimesWriteFailed"
)

// DefaultSilenceDuration is how long a node's silence lasts before it is renewed: it
// is renewed at half of it while the node updates, so a controller that dies leaves a
// silence that ends on its own within this.
const DefaultSilenceDuration = 30 * time.Minute

// PhaseWatch configures the loop that follows each node's update phases, apart from
// the rollout loop that drives them (it never holds a rollout back): it measures the
// phase times that the remaining-time estimate stands on (core/estimate, kept on the
// pool), sends the rollout's notifications, and holds an Alertmanager silence per node
// being updated. The zero value measures only.
type PhaseWatch struct {
	// Notify, when set, receives the rollout's notifications (its worker runs for the
	// leadership term).
	Notify *notify.Sender
	// Alertmanager, when set, holds a silence of SilenceMatchers ({{.Node}} replaced)
	// for each node while it updates, renewed every half SilenceDuration.
	Alertmanager    *alertmanager.Client
	SilenceMatchers []alertmanager.Matcher
	SilenceDuration time.Duration
	// OnSilenceFailed, when set, counts silences that could not be created, renewed
	// or expired (the controller's metric).
	OnSilenceFailed func(pool, node, op string)
}

// phaseWatch is the loop's state: what it saw of each node and pool, so that it tells
// each transition once.
type phaseWatch struct {
	cfg          PhaseWatch
	clients      *kube.Clients
	log          *slog.Logger
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	fieldManager string
	informers    rolloutInformers
	requeue      func(key string, after time.Duration)

	mu      sync.Mutex
	nodes   map[string]*nodeTrack
	pools   map[string]*poolTrack
	records map[string]estimate.Record // per pool, what it last wrote
}

type nodeTrack struct {
	pool, target string
	phase        estimate.Phase
	m            estimate.Milestones
	// told are the node's notifications told for this target: each once (a node
	// degraded again after a retry is told again).
	told    map[notify.Kind]bool
	silence string
	// silencedAt is the silence's start, kept when it is renewed: Alertmanager
	// updates an active silence in place only while its start stays.
	silencedAt, renewAt time.Time
	// doneSeen is when the node was first seen Done before its MachineConfigNode
	// said Updated (see doneWait).
	doneSeen time.Time
}

type poolTrack struct {
	target        string
	started, done bool
	halted        string
}

// nodeKey and poolKey tell the queue's two kinds of keys apart.
func nodeKey(n string) string { return "node/" + n }
func poolKey(p string) string { return "pool/" + p }

// setupPhaseWatch sets up the phase watch's loop on the shared rollout informers.
func (t *term) setupPhaseWatch() {
	cfg := t.cfg
	pw := &phaseWatch{
		cfg: cfg.PhaseWatch, clients: cfg.Clients, recorder: t.recorder, clock: cfg.Clock,
		fieldManager: cfg.Identity, informers: t.rollout,
		nodes: map[string]*nodeTrack{}, pools: map[string]*poolTrack{}, records: map[string]estimate.Record{},
	}
	if pw.cfg.SilenceDuration <= 0 {
		pw.cfg.SilenceDuration = DefaultSilenceDuration
	}
	l := newLoop("phases", pw.sync, t.log, cfg.Metrics.QueueMetrics())
	pw.requeue = func(key string, after time.Duration) { l.queue.AddAfter(key, after) }
	log := t.log.With("loop", "phases")
	pw.log = log
	t.register(t.rollout.nodes.Informer().AddEventHandler(handler(func(old, cur *corev1.Node) []string {
		if old != nil && cur != nil && !nodeChangeMatters(old, cur) {
			return nil
		}
		if cur == nil {
			return []string{nodeKey(old.Name)}
		}
		return []string{nodeKey(cur.Name)}
	}, l.add)))
	t.register(t.rollout.mcns.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.MachineConfigNode) []string {
		if cur == nil {
			return nil
		}
		return []string{nodeKey(cur.Name)} // its conditions are the phases
	}, l.add)))
	t.register(t.rollout.pools.Informer().AddEventHandler(handler(func(_, cur *mcfgv1.MachineConfigPool) []string {
		if cur == nil {
			return nil
		}
		return []string{poolKey(cur.Name)}
	}, l.add)))
	t.loops = append(t.loops, l)
}

func (pw *phaseWatch) sync(ctx context.Context, key string) error {
	kind, name, _ := strings.Cut(key, "/")
	if kind == "pool" {
		pw.syncPool(name)
		return nil
	}
	return pw.syncNode(ctx, name)
}

// poolOf is the pool that owns node (rollout.PoolFor: MCO's precedence), nil for a
// node no pool owns (or two custom pools select).
func (pw *phaseWatch) poolOf(n *corev1.Node) *mcfgv1.MachineConfigPool {
	ps, _ := pw.informers.pools.Lister().List(labels.Everything())
	p, _ := rollout.PoolFor(n, ps)
	return p
}

// members are the pool's nodes in the cache (rollout.Members).
func (pw *phaseWatch) members(pool *mcfgv1.MachineConfigPool) []*corev1.Node {
	nodes, _ := pw.informers.nodes.Lister().List(labels.Everything())
	ps, _ := pw.informers.pools.Lister().List(labels.Everything())
	members, _ := rollout.Members(pool, ps, nodes)
	return members
}

func (pw *phaseWatch) syncNode(ctx context.Context, name string) error {
	now := pw.clock.Now()
	n, err := pw.informers.nodes.Lister().Get(name)
	if apierrors.IsNotFound(err) {
		pw.mu.Lock()
		tr := pw.nodes[name]
		delete(pw.nodes, name)
		pw.mu.Unlock()
		if tr != nil && tr.silence != "" {
			pw.expire(ctx, tr.pool, name, tr.silence)
		}
		return nil
	}
	if err != nil {
		return err
	}
	pool := pw.poolOf(n)
	if pool == nil || pool.Spec.Configuration.Name == "" {
		return nil
	}
	target := pool.Spec.Configuration.Name
	mcn, _ := pw.informers.mcns.Lister().Get(name)
	cur, m := estimate.NodeOf(n, mcn, target)

	pw.mu.Lock()
	tr, seen := pw.nodes[name]
	if !seen || tr.target != target || tr.pool != pool.Name {
		// First sight (a new leader) or a new rollout: what it is now is where it
		// starts; only what happens from here is told.
		prev := estimate.Waiting
		if !seen {
			prev = cur.Phase
		}
		tr = &nodeTrack{pool: pool.Name, target: target, phase: prev, told: map[notify.Kind]bool{}}
		pw.nodes[name] = tr
		pw.seedPool(pool, !seen)
	}
	prev := tr.phase
	if updating(prev) && updating(cur.Phase) && cur.Phase < prev {
		// A phase is never left backwards within an update (conditions reset by
		// Updated before the annotations say Done read as an earlier phase).
		cur.Phase = prev
	}
	wait := false
	if cur.Phase == estimate.Finished && updating(prev) && !tr.m.Start.IsZero() && !updatedIn(mcn) {
		// Done in the node's annotations, but the MachineConfigNode's Updated (the
		// update's end time) not in the cache yet: its event comes soon; a little
		// while at most.
		if tr.doneSeen.IsZero() {
			tr.doneSeen = now
		}
		if now.Sub(tr.doneSeen) < doneWait {
			cur.Phase, wait = prev, true
		}
	}
	if prev == estimate.Failed && updating(cur.Phase) {
		tr.told[notify.NodeDegraded] = false // retried: a new failure is news
	}
	tr.phase = cur.Phase
	// The conditions lose their times when the update ends (Updated resets the
	// others): keep those seen while it ran.
	keep(&tr.m.Start, m.Start)
	keep(&tr.m.Drained, m.Drained)
	keep(&tr.m.Applied, m.Applied)
	keep(&tr.m.Rebooted, m.Rebooted)
	milestones := tr.m
	pw.seedPool(pool, false)
	pt := pw.pools[pool.Name]
	startRollout := updating(cur.Phase) && !pt.started
	if startRollout {
		pt.started, pt.done = true, false
	}
	told := tr.told
	pw.mu.Unlock()
	if wait {
		pw.requeue(nodeKey(name), time.Second)
	}

	ev := func(k notify.Kind, msg string) {
		pw.mu.Lock()
		again := told[k]
		told[k] = true
		pw.mu.Unlock()
		if !again {
			pw.send(pool, notify.Event{Kind: k, Pool: pool.Name, Node: name, Config: target, Message: msg, Time: now})
		}
	}
	if startRollout {
		pw.send(pool, notify.Event{Kind: notify.RolloutStarted, Pool: pool.Name, Config: target, Time: now})
		pw.requeue(poolKey(pool.Name), 0) // a halt already there is told now
	}
	if prev != cur.Phase {
		if prev < estimate.Applying && cur.Phase >= estimate.Applying && cur.Phase <= estimate.Finished && !milestones.Drained.IsZero() {
			ev(notify.NodeDrained, "")
		}
		if prev < estimate.Readying && cur.Phase >= estimate.Readying && cur.Phase <= estimate.Finished && !milestones.Rebooted.IsZero() {
			ev(notify.NodeRebooted, "")
		}
		switch cur.Phase {
		case estimate.Finished:
			if updating(prev) || prev == estimate.Waiting {
				pw.recordSample(ctx, pool, name, milestones, doneAt(mcn, now, milestones))
				ev(notify.NodeDone, "")
				pw.checkDone(pool)
			}
		case estimate.Failed:
			ev(notify.NodeDegraded, nodeanno.Reason(n))
			pw.requeue(poolKey(pool.Name), 0)
		}
	}
	pw.holdSilence(ctx, pool.Name, name, tr, cur.Phase, now)
	return nil
}

// doneWait is how long a node Done in its annotations waits for its
// MachineConfigNode's Updated condition in the cache before its update is measured
// to now.
const doneWait = 10 * time.Second

// updatedIn says whether the MachineConfigNode says Updated.
func updatedIn(mcn *mcfgv1.MachineConfigNode) bool {
	if mcn == nil {
		return false
	}
	c, ok := phase.Find(mcn.Status.Conditions, phase.Updated)
	return ok && c.Status == metav1.ConditionTrue
}

func keep(dst *time.Time, t time.Time) {
	if !t.IsZero() {
		*dst = t
	}
}

func updating(p estimate.Phase) bool { return p >= estimate.Draining && p <= estimate.Readying }

// doneAt is when the update ended: its Updated condition's transition, or, when the
// cache does not show that yet (the node's Done came first), now, but never before
// the last milestone.
func doneAt(mcn *mcfgv1.MachineConfigNode, now time.Time, m estimate.Milestones) time.Time {
	if mcn != nil {
		if c, ok := phase.Find(mcn.Status.Conditions, phase.Updated); ok && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	for _, t := range []time.Time{m.Start, m.Drained, m.Applied, m.Rebooted} {
		if t.After(now) {
			now = t
		}
	}
	return now
}

// seedPool starts the pool's track at its target; on first sight, a rollout already
// under way counts as started (told by the leader that saw it start).
func (pw *phaseWatch) seedPool(pool *mcfgv1.MachineConfigPool, firstSight bool) {
	pt := pw.pools[pool.Name]
	if pt != nil && pt.target == pool.Spec.Configuration.Name {
		return
	}
	pt = &poolTrack{target: pool.Spec.Configuration.Name}
	if firstSight {
		pt.started = pool.Status.UpdatedMachineCount < pool.Status.MachineCount
		pt.done = !pt.started
	}
	pw.pools[pool.Name] = pt
}

// checkDone tells RolloutDone once every member is Done at the target.
func (pw *phaseWatch) checkDone(pool *mcfgv1.MachineConfigPool) {
	nodes := pw.members(pool)
	if len(nodes) == 0 {
		return
	}
	target := pool.Spec.Configuration.Name
	for _, n := range nodes {
		if !rollout.DoneAt(n, target) {
			return
		}
	}
	pw.mu.Lock()
	pt := pw.pools[pool.Name]
	tell := pt != nil && pt.started && !pt.done
	if tell {
		pt.done = true
	}
	pw.mu.Unlock()
	if tell {
		pw.send(pool, notify.Event{Kind: notify.RolloutDone, Pool: pool.Name, Config: target, Message: fmt.Sprintf("%d nodes updated", len(nodes)), Time: pw.clock.Now()})
	}
}

// syncPool tells RolloutHalted when the pool's rollout is held (RolloutHeld) or
// degraded, once per reason, while its rollout runs.
func (pw *phaseWatch) syncPool(name string) {
	pool, err := pw.informers.pools.Lister().Get(name)
	if err != nil || pool.Spec.Configuration.Name == "" {
		return
	}
	why := halted(pool)
	pw.mu.Lock()
	_, seen := pw.pools[name]
	pw.seedPool(pool, !seen)
	pt := pw.pools[name]
	if !seen {
		pt.halted = why // a new leader tells only what happens from here
	}
	tell := why != "" && why != pt.halted && pt.started && !pt.done
	pt.halted = why
	pw.mu.Unlock()
	if tell {
		pw.send(pool, notify.Event{Kind: notify.RolloutHalted, Pool: name, Config: pool.Spec.Configuration.Name, Message: why, Time: pw.clock.Now()})
	}
}

// halted is why the pool's rollout stands still, or "": a node degraded, or its
// policy holding it.
func halted(p *mcfgv1.MachineConfigPool) string {
	for _, t := range []mcfgv1.MachineConfigPoolConditionType{mcfgv1.MachineConfigPoolNodeDegraded, mcfgv1.MachineConfigPoolRenderDegraded, policy.HeldCondition} {
		if c := rollout.FindCondition(&p.Status, t); c != nil && c.Status == corev1.ConditionTrue {
			return string(t) + ": " + c.Message
		}
	}
	return ""
}

// send adds the estimate to ev and hands it to the notifier.
func (pw *phaseWatch) send(pool *mcfgv1.MachineConfigPool, ev notify.Event) {
	if pw.cfg.Notify == nil {
		return
	}
	if ev.Kind != notify.RolloutDone {
		if e := pw.estimate(pool); e.OK {
			ev.Remaining = e.String()
		}
	}
	pw.log.Info("notification", "kind", ev.Kind, "pool", ev.Pool, "node", ev.Node)
	pw.cfg.Notify.Send(ev)
}

func (pw *phaseWatch) estimate(pool *mcfgv1.MachineConfigPool) estimate.Estimate {
	nodes := pw.members(pool)
	if len(nodes) == 0 {
		return estimate.Estimate{}
	}
	p := pool.DeepCopy()
	pw.mu.Lock()
	if r, ok := pw.records[pool.Name]; ok {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[estimate.PhaseTimesKey] = r.Format()
	}
	pw.mu.Unlock()
	e, _ := estimate.ForPool(p, nodes, func(n string) *mcfgv1.MachineConfigNode {
		m, _ := pw.informers.mcns.Lister().Get(n)
		return m
	}, pw.clock.Now())
	return e
}

// recordSample adds the node's measured update to the pool's Record and writes it to
// the pool's annotation (estimate.PhaseTimesKey). A failed write is an Event; the
// next sample writes the whole record again.
func (pw *phaseWatch) recordSample(ctx context.Context, pool *mcfgv1.MachineConfigPool, node string, m estimate.Milestones, done time.Time) {
	s, ok := estimate.SampleOf(m, done)
	if !ok {
		return
	}
	pw.mu.Lock()
	r, known := pw.records[pool.Name]
	if !known {
		r, _ = estimate.Parse(pool) // a bad annotation starts afresh
	}
	r = r.Add(s)
	pw.records[pool.Name] = r
	pw.mu.Unlock()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{estimate.PhaseTimesKey: r.Format()}}})
	_, err := pw.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, pool.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: pw.fieldManager})
	if err != nil {
		pw.log.Warn("phase times not written", "pool", pool.Name, "node", node, "err", err)
		if pw.recorder != nil {
			pw.recorder.Eventf(pool, corev1.EventTypeWarning, reasonPhaseTimesWrite, "annotation %s: %v", estimate.PhaseTimesKey, err)
		}
	}
}

// holdSilence keeps the node's silence while it updates (created at its start,
// renewed every half SilenceDuration) and expires it when it is Done or degraded (a
// degraded node's alerts are real).
func (pw *phaseWatch) holdSilence(ctx context.Context, pool, node string, tr *nodeTrack, p estimate.Phase, now time.Time) {
	if pw.cfg.Alertmanager == nil {
		return
	}
	pw.mu.Lock()
	id, renewAt, startsAt := tr.silence, tr.renewAt, tr.silencedAt
	pw.mu.Unlock()
	if !updating(p) {
		if id != "" {
			pw.expire(ctx, pool, node, id)
			pw.mu.Lock()
			tr.silence = ""
			pw.mu.Unlock()
		}
		return
	}
	ttl := pw.cfg.SilenceDuration
	if id == "" {
		startsAt = now
	}
	if id != "" && now.Before(renewAt) {
		pw.requeue(nodeKey(node), renewAt.Sub(now))
		return
	}
	s := alertmanager.Silence{
		ID: id, Matchers: alertmanager.ForNode(pw.cfg.SilenceMatchers, node),
		StartsAt: startsAt, EndsAt: now.Add(ttl), CreatedBy: pw.fieldManager,
		Comment: fmt.Sprintf("mcotui: node %s of pool %s is being updated to %s", node, pool, tr.target),
	}
	newID, err := pw.cfg.Alertmanager.Put(ctx, s)
	if err != nil {
		op := "create"
		if id != "" {
			op = "renew"
		}
		pw.silenceFailed(pool, node, op, err)
		pw.requeue(nodeKey(node), time.Minute) // try again; the rollout goes on
		return
	}
	pw.mu.Lock()
	tr.silence, tr.renewAt, tr.silencedAt = newID, now.Add(ttl/2), startsAt
	pw.mu.Unlock()
	pw.log.Info("silence held", "pool", pool, "node", node, "silence", newID, "until", s.EndsAt)
	pw.requeue(nodeKey(node), ttl/2)
}

func (pw *phaseWatch) expire(ctx context.Context, pool, node, id string) {
	if err := pw.cfg.Alertmanager.Expire(ctx, id); err != nil {
		pw.silenceFailed(pool, node, "expire", err)
		return
	}
	pw.log.Info("silence expired", "pool", pool, "node", node, "silence", id)
}

// silenceFailed reports a silence that could not be created, renewed or expired: a log
// line, an Event on the node, the metric. The rollout goes on.
func (pw *phaseWatch) silenceFailed(pool, node, op string, err error) {
	pw.log.Warn("silence failed", "op", op, "pool", pool, "node", node, "err", err)
	if pw.recorder != nil {
		ref := &corev1.ObjectReference{Kind: "Node", Name: node, APIVersion: "v1"}
		pw.recorder.Eventf(ref, corev1.EventTypeWarning, reasonSilenceFailed, "could not %s the Alertmanager silence of node %s (the rollout goes on): %v", op, node, err)
	}
	if pw.cfg.OnSilenceFailed != nil {
		pw.cfg.OnSilenceFailed(pool, node, op)
	}
}
