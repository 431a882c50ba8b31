package rollout

import (
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/policy"
)

// Reasons a pool's rollout policy holds its rollout (Hold.Reason, and the reasons of
// the pool's RolloutHeld condition).
const (
	HeldOutsideWindow = "OutsideWindow"
	HeldGateFailing   = "GateFailing"
	HeldInvalidPolicy = "InvalidPolicy"
	// HeldWaitingForPool: the pool waits for another pool (policy.WaitForPoolsKey,
	// policy.ExclusiveGroupKey).
	HeldWaitingForPool = "WaitingForPool"
	// HeldUnhealthyNodes: too many nodes the rollout updated are unhealthy
	// (policy.HaltUnhealthyKey).
	HeldUnhealthyNodes = "UnhealthyNodes"
	// HeldHookRunning and HeldHookFailed: a hook's Job runs, or failed
	// (policy.Hooks), which the driver that runs the hooks says.
	HeldHookRunning = "HookRunning"
	HeldHookFailed  = "HookFailed"
	// HeldNodeHookFailed: a node's own hook (before-drain, after-node) failed; that
	// node is stopped (Options.Stopped) and the others go on within maxUnavailable.
	HeldNodeHookFailed = "NodeHookFailed"
)

// HookedRolloutKey marks a pool whose rollout to the config it names began under
// hooks: the driver that runs them sets it before the first hook and removes it once
// the after-rollout hook has succeeded. Until then the rollout is not over.
const HookedRolloutKey = "mcotui.io/hooked-rollout"

// HookedRolloutOpen reports whether pool's hooked rollout has not ended: its
// after-rollout hook has not succeeded yet. Until then neither the drive nor a follower
// (rollout --wait) says the pool is updated, though every node may be.
func HookedRolloutOpen(pool *mcfgv1.MachineConfigPool) bool {
	return pool.Annotations[HookedRolloutKey] != ""
}

// GatePoll is how soon a gate that holds for something no informer event announces
// (an alert, a pod not Ready) is looked at again.
const GatePoll = 30 * time.Second

// Hold is what a pool's rollout policy says at one instant.
type Hold struct {
	Reason  string // "" when nothing holds; else one of the Held* reasons
	Message string
	// Recheck is when the pool must be looked at again though nothing changes: the
	// window opens or closes, a soak ends, an alert may have resolved. 0: no need.
	Recheck time.Duration
	// Invalid says the policy does not parse: no step is taken at all.
	Invalid bool
}

// PolicyOptions reads the pool's rollout policy (policy.FromPool) and evaluates it at
// now: the plan options that carry it, and what holds the rollout. evidence gathers
// what the pool's health gates read; it is called only when the policy has gates. An
// invalid policy holds the rollout with its error; it never reads as no policy.
//
// Every step goes through here, whoever takes it: the controller's sync, `rollout
// --wait`'s and the TUI's drive, and the TUI's manual step and retry, so that none of
// them targets a node outside a maintenance window or past a failing gate.
func PolicyOptions(pool *mcfgv1.MachineConfigPool, now time.Time, evidence func(policy.Gates) policy.Evidence) (Options, Hold) {
	pol, err := policy.FromPool(pool)
	if err != nil {
		return Options{}, Hold{Reason: HeldInvalidPolicy, Message: err.Error() + "; no node is targeted until it is fixed", Invalid: true}
	}
	opts := Options{Policy: pol, Now: now}
	var hold Hold
	window := pol.Windows.At(now)
	if !pol.Windows.Always() {
		hold.Recheck = window.Next.Sub(now)
		if !window.Open {
			return opts, Hold{Reason: HeldOutsideWindow, Message: "outside the maintenance windows: " + window.Settled(), Recheck: hold.Recheck}
		}
	}
	if !pol.Gates.Any() || evidence == nil {
		return opts, hold
	}
	ev := evidence(pol.Gates)
	recheck := func(d time.Duration) time.Duration {
		if d <= 0 {
			d = GatePoll
		}
		if hold.Recheck > 0 {
			d = min(d, hold.Recheck)
		}
		return d
	}
	// The order across pools first: a pool that waits for another is not held by its
	// own health, which it has not begun to risk.
	if seq := pol.Gates.Sequence; seq.Any() {
		reason := ""
		if ev.PoolsErr != nil {
			reason = fmt.Sprintf("cannot read the other pools: %v", ev.PoolsErr)
		} else {
			reason = seq.Check(pool, ev.Pools, PoolUpdated, func(p *mcfgv1.MachineConfigPool) bool {
				if b, ok := ev.Busy[p.Name]; ok {
					return b
				}
				return policy.PoolBusy(p)
			})
		}
		if reason != "" {
			opts.Gate = reason
			// A pool's status change requeues the pools that wait on it; the poll is a
			// floor for whatever misses one.
			return opts, Hold{Reason: HeldWaitingForPool, Message: reason, Recheck: recheck(0)}
		}
	}
	if reason := pol.Gates.Halt(ev); reason != "" {
		opts.Gate = reason
		return opts, Hold{Reason: HeldUnhealthyNodes, Message: "halted: " + reason, Recheck: recheck(0)}
	}
	reason, wait := pol.Gates.Check(ev)
	if reason == "" {
		return opts, hold
	}
	opts.Gate = reason
	return opts, Hold{Reason: HeldGateFailing, Message: "held by a health gate: " + reason, Recheck: recheck(wait)}
}
