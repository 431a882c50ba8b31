// Package policy reads a pool's rollout policy: the maintenance windows, health gates
// and update order set as mcotui.io/ annotations on a MachineConfigPool, and the hold
// and priority set on a Node. MCO ignores these annotations, and `oc` and kubectl show
// them, so a pool shared with MCO keeps its meaning to both.
//
// An annotation that does not parse is an error naming it and what it wants: a caller
// stops targeting nodes and says why, never falls back to "no policy".
//
// Everything here is pure: the clock is the time passed in.
package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pool annotations.
const (
	// WindowsKey holds the maintenance windows (ParseSchedule): no node is targeted
	// outside them; nodes mid-update finish.
	WindowsKey = "mcotui.io/maintenance-windows"
	// OrderKey is OldestFirst or NewestFirst (by the Node's creation), as MCO's proposed
	// update order; without it nodes go by zone, age and name.
	OrderKey = "mcotui.io/update-order"
	// AlertsGateKey is a Prometheus label matcher list (severity="critical",
	// namespace=~"shop.*"): no more nodes are targeted while an alert matching it fires.
	AlertsGateKey = "mcotui.io/health-gate-alerts"
	// PodsGateKey is a label selector of pods that must be Ready on the nodes just
	// updated, for the soak time, before more nodes are targeted.
	PodsGateKey = "mcotui.io/health-gate-pods"
	// SoakKey is how long the nodes just updated (and the gated pods on them) must have
	// been Ready before more nodes are targeted: a Go duration, e.g. 10m.
	SoakKey = "mcotui.io/health-gate-soak"
)

// HeldCondition is the pool condition in which the controller (and every driver) says
// whether the policy holds the rollout, and why: True with reason OutsideWindow,
// GateFailing or InvalidPolicy; False otherwise, naming the held nodes. MCO has no such
// condition; kubectl and oc list it with the others.
const HeldCondition mcfgv1.MachineConfigPoolConditionType = "RolloutHeld"

// PoolKeys are the pool annotations of a policy.
var PoolKeys = append([]string{WindowsKey, OrderKey, AlertsGateKey, PodsGateKey, SoakKey, WaitForPoolsKey, ExclusiveGroupKey, HealthChecksKey, HaltUnhealthyKey}, hookKeys()...)

// Node annotations.
const (
	// HoldKey "true" keeps a node out of the rollout: counted and shown as held.
	HoldKey = "mcotui.io/update-hold"
	// PriorityKey is an integer: nodes of higher priority are targeted first (default 0).
	PriorityKey = "mcotui.io/update-priority"
)

// Order is the order in which a pool's nodes are targeted.
type Order string

// Orders.
const (
	OrderDefault     Order = ""
	OrderOldestFirst Order = "OldestFirst"
	OrderNewestFirst Order = "NewestFirst"
)

// Policy is a pool's rollout policy. The zero Policy places no limit.
type Policy struct {
	Windows Schedule
	Order   Order
	Gates   Gates
	Hooks   Hooks // Jobs run before and after the rollout and each node (hooks.go)
}

// Gates must pass before more nodes are targeted.
type Gates struct {
	Alerts []Matcher       // nil: no alert gate
	Pods   labels.Selector // nil: no pod gate
	Soak   time.Duration   // how long the just-updated nodes and pods must be Ready

	Checks        []HealthCheck // CEL over cluster objects (health.go)
	HaltUnhealthy int           // halt at this many unhealthy updated nodes; 0: never (health.go)
	Sequence      Sequence      // order across pools (sequence.go)
}

// Any says whether a gate is set.
func (g Gates) Any() bool {
	return g.Alerts != nil || g.Pods != nil || g.Soak > 0 || len(g.Checks) > 0 || g.HaltUnhealthy > 0 || g.Sequence.Any()
}

// FromPool reads the pool's policy. Every annotation that does not parse is in the
// error, each named with what it wants.
func FromPool(pool *mcfgv1.MachineConfigPool) (Policy, error) {
	var p Policy
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, fmt.Errorf("pool %s annotation %s: %w", pool.Name, key, err))
	}
	a := pool.Annotations
	if v, ok := a[WindowsKey]; ok {
		s, err := ParseSchedule(v)
		if err != nil {
			bad(WindowsKey, err)
		}
		p.Windows = s
	}
	if v, ok := a[OrderKey]; ok {
		switch o := Order(strings.TrimSpace(v)); o {
		case OrderOldestFirst, OrderNewestFirst:
			p.Order = o
		default:
			bad(OrderKey, fmt.Errorf("%q is not OldestFirst or NewestFirst", v))
		}
	}
	if v, ok := a[AlertsGateKey]; ok {
		ms, err := ParseMatchers(v)
		if err != nil {
			bad(AlertsGateKey, err)
		}
		p.Gates.Alerts = ms
	}
	if v, ok := a[PodsGateKey]; ok {
		sel, err := labels.Parse(v)
		switch {
		case err != nil:
			bad(PodsGateKey, fmt.Errorf("not a label selector: %w", err))
		case sel.Empty():
			bad(PodsGateKey, fmt.Errorf("empty selector: it would gate on every pod of the nodes; name the pods, e.g. app=frontend"))
		default:
			p.Gates.Pods = sel
		}
	}
	if v, ok := a[SoakKey]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			bad(SoakKey, fmt.Errorf("%q is not a duration (want e.g. 10m)", v))
		case d < 0:
			bad(SoakKey, fmt.Errorf("%q is negative", v))
		default:
			p.Gates.Soak = d
		}
	}
	parseSequence(pool, &p, bad)
	parseHealth(pool, &p, bad)
	parseHooks(pool, &p, bad)
	if p.Gates.Pods != nil && p.Gates.Soak == 0 {
		// Pods Ready for no time at all says nothing a rollout does not already wait for.
		bad(PodsGateKey, fmt.Errorf("needs %s, how long the pods must be Ready", SoakKey))
	}
	return p, errors.Join(errs...)
}

// Held says whether the node is held out of the rollout. A value other than true or
// false is an error: a typo must not release a node its owner meant to hold.
func Held(n *corev1.Node) (bool, error) {
	v, ok := n.Annotations[HoldKey]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return true, fmt.Errorf("node %s annotation %s: %q is not true or false (the node is held until it is)", n.Name, HoldKey, v)
	}
	return b, nil
}

// Priority is the node's update priority (0 when unset).
func Priority(n *corev1.Node) (int, error) {
	v, ok := n.Annotations[PriorityKey]
	if !ok {
		return 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("node %s annotation %s: %q is not an integer", n.Name, PriorityKey, v)
	}
	return p, nil
}

// Summary says what the policy does, as of now, for `rollout`, `status` and the TUI:
// "windows Sat 22:00-Sun 04:00 Europe/Berlin (next window in 3h12m (Sat 22:00 CET));
// gates: alerts {severity="critical"}, pods app=web Ready, soak 10m0s; order OldestFirst".
// "" for no policy.
func (p Policy) Summary(now time.Time) string {
	var parts []string
	if !p.Windows.Always() {
		ws := make([]string, len(p.Windows))
		for i, w := range p.Windows {
			ws[i] = w.String()
		}
		parts = append(parts, fmt.Sprintf("windows %s (%s)", strings.Join(ws, "; "), p.Windows.At(now).Describe(now)))
	}
	var gates []string
	if p.Gates.Alerts != nil {
		gates = append(gates, "alerts "+matchersString(p.Gates.Alerts))
	}
	if p.Gates.Pods != nil {
		gates = append(gates, "pods "+p.Gates.Pods.String()+" Ready")
	}
	if p.Gates.Soak > 0 {
		gates = append(gates, "soak "+p.Gates.Soak.String())
	}
	for _, c := range p.Gates.Checks {
		gates = append(gates, "check "+c.Name)
	}
	if p.Gates.HaltUnhealthy > 0 {
		gates = append(gates, fmt.Sprintf("halt at %d unhealthy", p.Gates.HaltUnhealthy))
	}
	if len(gates) > 0 {
		parts = append(parts, "gates: "+strings.Join(gates, ", "))
	}
	if p.Order != OrderDefault {
		parts = append(parts, "order "+string(p.Order))
	}
	if w := p.Gates.Sequence.WaitFor; len(w) > 0 {
		parts = append(parts, "after pools "+strings.Join(w, ", "))
	}
	if g := p.Gates.Sequence.Exclusive; g != "" {
		parts = append(parts, "exclusive group "+g)
	}
	for _, h := range AllHooks {
		if r, ok := p.Hooks[h]; ok {
			parts = append(parts, "hook "+string(h)+" "+r.String())
		}
	}
	return strings.Join(parts, "; ")
}
