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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// Reasons of RolloutHeld: rollout.PolicyOptions's, and the one that says nothing holds.
const (
	reasonOutsideWindow = rollout.HeldOutsideWindow
	reasonGateFailing   = rollout.HeldGateFailing
	reasonInvalidPolicy = rollout.HeldInvalidPolicy
	reasonAsExpected    = "AsExpected"
)

// policyHold is what the pool's policy says at one sync (rollout.Hold), and the nodes
// held out of the rollout (policy.HoldKey), which RolloutHeld names whether or not the
// policy holds the rest.
type policyHold struct {
	rollout.Hold
	Held []string
}

// policyOptions evaluates the pool's rollout policy at now by kube.PolicyOptions, the
// code path the TUI's steps take too.
func (d *driver) policyOptions(ctx context.Context, st PoolState, now time.Time) (rollout.Options, policyHold) {
	in := kube.GateInputs{Clients: d.clients, Alerts: d.alerts, MachineConfigNode: d.cachedMachineConfigNode}
	if d.pools != nil {
		in.Pools = func() ([]*mcfgv1.MachineConfigPool, error) {
			all, err := d.pools.List(labels.Everything())
			if err == nil {
				d.ownPools.latestAll(all)
			}
			return all, err
		}
		in.Members = func(p *mcfgv1.MachineConfigPool) ([]*corev1.Node, error) {
			o, err := d.cached(p.Name, nil)
			return o.Nodes, err
		}
	} else {
		in.Members = func(p *mcfgv1.MachineConfigPool) ([]*corev1.Node, error) {
			o, err := ReadPool(ctx, d.clients, p.Name)
			return o.Nodes, err
		}
	}
	opts, hold := kube.PolicyOptions(ctx, in, st.Pool, st.Nodes, now)
	return opts, policyHold{Hold: hold}
}

// setHoldCondition puts RolloutHeld into status. A pool that never had a policy and
// is not held gets no condition, so that pools without one keep MCO's conditions only.
func setHoldCondition(status *mcfgv1.MachineConfigPoolStatus, prev []mcfgv1.MachineConfigPoolCondition, hold policyHold, hasPolicy bool, now metav1.Time) {
	var old *mcfgv1.MachineConfigPoolCondition
	for i := range prev {
		if prev[i].Type == policy.HeldCondition {
			old = &prev[i]
		}
	}
	if old == nil && hold.Reason == "" && !hasPolicy && len(hold.Held) == 0 {
		return
	}
	c := mcfgv1.MachineConfigPoolCondition{Type: policy.HeldCondition, Status: corev1.ConditionFalse, Reason: reasonAsExpected, Message: "the rollout policy lets nodes start", LastTransitionTime: now}
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
		if status.Conditions[i].Type == policy.HeldCondition {
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
		if c.Type == policy.HeldCondition {
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
