package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// AlertSource reads Prometheus's alerts for the alert gate (prom.Client).
type AlertSource interface {
	Alerts(ctx context.Context) ([]policy.Alert, error)
}

// RolloutHeld is the pool condition that says the pool's rollout policy lets no node
// start now, and why (policy.HeldCondition).
const RolloutHeld = policy.HeldCondition

// Reasons of RolloutHeld.
const (
	reasonOutsideWindow = "OutsideWindow"
	reasonGateFailing   = "GateFailing"
	reasonInvalidPolicy = "InvalidPolicy"
	reasonAsExpected    = "AsExpected"
)

// gatePoll is how soon a gate that holds for something no informer event announces
// (an alert, a pod not Ready) is looked at again.
const gatePoll = 30 * time.Second

// policyHold is what the pool's policy says at one sync.
type policyHold struct {
	Reason  string // "" when nothing holds
	Message string
	// Recheck is when the pool must be synced again though nothing changes: the window
	// opens or closes, a soak ends, an alert may have resolved. 0: no need.
	Recheck time.Duration
	// Invalid says the policy does not parse: no step is taken at all.
	Invalid bool
	// Held are the nodes held out of the rollout (policy.HoldKey), which RolloutHeld
	// names whether or not the policy holds the rest.
	Held []string
}

// policyOptions reads the pool's rollout policy (core/policy) and evaluates it at now:
// the plan options that carry it, and what holds the rollout. An invalid policy holds
// the rollout with its error; it never reads as no policy.
func (d *Driver) policyOptions(ctx context.Context, st PoolState, now time.Time) (rollout.Options, policyHold) {
	pol, err := policy.FromPool(st.Pool)
	if err != nil {
		return rollout.Options{}, policyHold{Reason: reasonInvalidPolicy, Message: err.Error() + "; no node is targeted until it is fixed", Invalid: true}
	}
	opts := rollout.Options{Policy: pol, Now: now}
	var hold policyHold
	window := pol.Windows.At(now)
	if !pol.Windows.Always() {
		hold.Recheck = window.Next.Sub(now)
		if !window.Open {
			return opts, policyHold{Reason: reasonOutsideWindow, Message: "outside the maintenance windows: " + window.Settled(), Recheck: hold.Recheck}
		}
	}
	if !pol.Gates.Any() {
		return opts, hold
	}
	e := d.gateEvidence(ctx, st, pol.Gates, now)
	reason, wait := pol.Gates.Check(e)
	if reason == "" {
		return opts, hold
	}
	opts.Gate = reason
	recheck := wait
	if recheck <= 0 {
		recheck = gatePoll
	}
	if hold.Recheck > 0 {
		recheck = min(recheck, hold.Recheck)
	}
	return opts, policyHold{Reason: reasonGateFailing, Message: "held by a health gate: " + reason, Recheck: recheck}
}

// gateEvidence gathers what the gates read: the alerts, and the nodes just updated to
// the pool's target with their gated pods.
func (d *Driver) gateEvidence(ctx context.Context, st PoolState, g policy.Gates, now time.Time) policy.Evidence {
	e := policy.Evidence{Now: now}
	if g.Alerts != nil {
		if d.alerts == nil {
			e.AlertsErr = fmt.Errorf("no Prometheus to ask: start the controller (or `rollout --wait`) with --prometheus-url")
		} else {
			e.Alerts, e.AlertsErr = d.alerts.Alerts(ctx)
		}
	}
	target := st.Pool.Spec.Configuration.Name
	for _, n := range st.Nodes {
		if !rollout.DoneAt(n, target) {
			continue
		}
		u := policy.UpdatedNode{Name: n.Name, UpdatedAt: d.updatedAt(n), ReadySince: readySince(n.Status.Conditions)}
		if !g.JustUpdated(now, u.UpdatedAt, u.ReadySince) {
			continue
		}
		if g.Pods != nil {
			pods, err := d.clients.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
				LabelSelector: g.Pods.String(), FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String(),
			})
			if err != nil {
				// Unknown pods hold the rollout as pods not Ready would.
				u.Pods = []policy.Pod{{Namespace: "?", Name: fmt.Sprintf("(list pods on node %s: %v)", n.Name, err)}}
				e.Updated = append(e.Updated, u)
				continue
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				u.Pods = append(u.Pods, policy.Pod{Namespace: p.Namespace, Name: p.Name, ReadySince: podReadySince(p)})
			}
		}
		e.Updated = append(e.Updated, u)
	}
	return e
}

// updatedAt is when the node's update to its current config finished: when its
// MachineConfigNode's Updated condition last turned True. Zero when unknown, which
// leaves the node's Ready time alone to decide.
func (d *Driver) updatedAt(n *corev1.Node) time.Time {
	mcn := d.cachedMachineConfigNode(n.Name)
	if mcn == nil || mcn.Status.ConfigVersion == nil || mcn.Status.ConfigVersion.Current != nodeanno.Current(n) {
		return time.Time{}
	}
	for _, c := range mcn.Status.Conditions {
		if c.Type == string(mcfgv1.MachineConfigNodeUpdated) && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func readySince(conds []corev1.NodeCondition) time.Time {
	for _, c := range conds {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func podReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// setHoldCondition puts RolloutHeld into status. A pool that never had a policy and
// is not held gets no condition, so that pools without one keep MCO's conditions only.
func setHoldCondition(status *mcfgv1.MachineConfigPoolStatus, prev []mcfgv1.MachineConfigPoolCondition, hold policyHold, hasPolicy bool, now metav1.Time) {
	var old *mcfgv1.MachineConfigPoolCondition
	for i := range prev {
		if prev[i].Type == RolloutHeld {
			old = &prev[i]
		}
	}
	if old == nil && hold.Reason == "" && !hasPolicy && len(hold.Held) == 0 {
		return
	}
	c := mcfgv1.MachineConfigPoolCondition{Type: RolloutHeld, Status: corev1.ConditionFalse, Reason: reasonAsExpected, Message: "the rollout policy lets nodes start", LastTransitionTime: now}
	if hold.Reason != "" {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, hold.Reason, hold.Message
	}
	if n := len(hold.Held); n > 0 {
		const shown = 5
		names := strings.Join(hold.Held[:min(n, shown)], ", ")
		if n > shown {
			names += fmt.Sprintf(" and %d more", n-shown)
		}
		c.Message += fmt.Sprintf("; %d held by %s: %s", n, policy.HoldKey, names)
	}
	if old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == RolloutHeld {
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// hasPolicy says whether the pool carries any rollout policy annotation.
func hasPolicy(p *mcfgv1.MachineConfigPool) bool {
	for _, k := range policy.PoolKeys {
		if _, ok := p.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// sameHold says whether the conditions already say the pool is held for hold's reason.
func sameHold(conds []mcfgv1.MachineConfigPoolCondition, hold policyHold) bool {
	for _, c := range conds {
		if c.Type == RolloutHeld {
			return c.Status == corev1.ConditionTrue && c.Reason == hold.Reason
		}
	}
	return false
}

// requeuer syncs pools again after a while on the controller's clock (so that a test's
// fake clock opens a window), one pending timer per pool: a sooner request replaces a
// later one, a later one waits for the sooner.
type requeuer struct {
	clock clock.WithDelayedExecution
	add   func(string)

	mu     sync.Mutex
	due    map[string]time.Time
	timers map[string]clock.Timer
}

func newRequeuer(c clock.PassiveClock, add func(string)) *requeuer {
	ck, ok := c.(clock.WithDelayedExecution)
	if !ok {
		ck = clock.RealClock{}
	}
	return &requeuer{clock: ck, add: add, due: map[string]time.Time{}, timers: map[string]clock.Timer{}}
}

func (r *requeuer) after(pool string, d time.Duration) {
	if d <= 0 {
		r.add(pool) // now, whatever the clock: a fake one would hold it until stepped
		return
	}
	at := r.clock.Now().Add(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if due, ok := r.due[pool]; ok && !due.After(at) {
		return
	}
	if t := r.timers[pool]; t != nil {
		t.Stop()
	}
	r.due[pool] = at
	r.timers[pool] = r.clock.AfterFunc(d, func() {
		r.mu.Lock()
		delete(r.due, pool)
		delete(r.timers, pool)
		r.mu.Unlock()
		r.add(pool)
	})
}

// stop cancels every pending timer, at the end of a leadership term.
func (r *requeuer) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pool, t := range r.timers {
		t.Stop()
		delete(r.timers, pool)
		delete(r.due, pool)
	}
}

// samePolicy: the pools' rollout policy annotations are the same. Like the rollback
// pin they are metadata, which does not move a pool's generation.
func samePolicy(a, b *mcfgv1.MachineConfigPool) bool {
	for _, k := range policy.PoolKeys {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}
