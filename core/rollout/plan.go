package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
)

// ErrNoTarget is returned when there is no rendered config to roll out: the pool has
// not been rendered yet and no target was given.
var ErrNoTarget = errors.New("no rendered config to roll out")

// Options are mcotui's additions to MCO's rollout rules. The zero value is MCO's
// behaviour.
type Options struct {
	// Target is the rendered config to roll out instead of the pool's
	// spec.configuration.name: a previous rendered config to roll back to (see
	// RollbackTarget), or one to pin. All of MCO's rules apply to it unchanged.
	Target string

	// Canary, when positive, holds the rollout at its first Canary nodes: until that
	// many nodes are Done at the target, no more than Canary nodes target it at all.
	// Once they are Done the rollout continues at maxUnavailable. The rule is
	// stateless, read off the nodes alone, so a canary that fails (or is retargeted
	// elsewhere) holds the rollout until it is fixed.
	Canary int

	// Retry names nodes whose update to the target failed (Degraded or Unreconcilable)
	// to be tried again. A retry takes no capacity: a failing node already counts
	// against maxUnavailable. Names of nodes that are not failing at the target are
	// noted in their Skip and otherwise ignored.
	Retry []string

	// Policy is the pool's rollout policy (policy.FromPool): outside its maintenance
	// windows no node is targeted or retried (nodes mid-update finish); nodes go in its
	// update order, higher policy.PriorityKey first; held nodes (policy.HoldKey) are
	// left out and listed in Step.Held.
	Policy policy.Policy
	// Now is when the windows are read. Required when Policy has windows.
	Now time.Time
	// Gate, when not empty, is why a health gate holds the rollout (the caller
	// evaluates the gates, which read the cluster): no node is targeted or retried.
	Gate string

	// Stage, when set, stages the target's OS image on the nodes it changes before
	// they are targeted (stage.go): such a node is a candidate only once it has
	// staged the image, and Step.Stage lists the nodes to ask to stage it now. Nil:
	// MCO's behaviour, the image is downloaded after the drain.
	Stage *Stage

	// Stopped are nodes a failed hook of their own stopped (a before-drain or
	// after-node Job; name to why): none is a candidate or retried, and each counts
	// against maxUnavailable as a failed node does, so that a failure that repeats on
	// every node stops the rollout at maxUnavailable of them rather than running
	// through the pool.
	Stopped map[string]string

	// Brief leaves Step.Skipped empty: a controller that plans at every change and
	// acts on the targets alone need not explain thousands of nodes each time.
	Brief bool
}

// SkipReason says why a step leaves a node out.
type SkipReason string

// Reasons a node is not targeted in a step.
const (
	// SkipAtTarget: the node already targets the config (Done, updating or failing).
	SkipAtTarget SkipReason = "AtTarget"
	// SkipNotReady: the node is not Ready or is cordoned; it is not a candidate.
	SkipNotReady SkipReason = "NotReady"
	// SkipPaused: the pool is paused.
	SkipPaused SkipReason = "Paused"
	// SkipNoCapacity: maxUnavailable is used up; the node waits its turn.
	SkipNoCapacity SkipReason = "NoCapacity"
	// SkipCanary: the canary has not finished yet.
	SkipCanary SkipReason = "Canary"
	// SkipHeld: the node is held out of the rollout (policy.HoldKey).
	SkipHeld SkipReason = "Held"
	// SkipWindow: outside the pool's maintenance windows.
	SkipWindow SkipReason = "OutsideWindow"
	// SkipGate: a health gate holds the rollout.
	SkipGate SkipReason = "Gate"
	// SkipStaging: the node is staging the target's OS image (or waits its turn to);
	// it becomes a candidate once staged.
	SkipStaging SkipReason = "Staging"
	// SkipStopped: a hook of the node's own failed (Options.Stopped).
	SkipStopped SkipReason = "HookFailed"
)

// Skip is a node a step leaves out, and why, for previews and `mcotui rollout`.
type Skip struct {
	Node    string
	Reason  SkipReason
	Message string
}

// Step is one decision of the rollout: which nodes get the target now.
type Step struct {
	Pool   string
	Target string
	Paused bool

	// MaxUnavailable is the pool's budget (see MaxUnavailable), Unavailable the nodes
	// counted against it now, and FailingAtTarget the nodes whose update to Target
	// failed, which count against it too (a transient failure may clear, and then
	// they update at once). All lists are in rollout order.
	MaxUnavailable  int
	Unavailable     []string
	FailingAtTarget []string
	// Capacity is how many more nodes may start an update now.
	Capacity int
	// Canary says the canary limits this step (Options.Canary).
	Canary bool

	// Targets are the nodes to set to Target now, in rollout order; Retry the failing
	// nodes to try again (Options.Retry).
	Targets []string
	Retry   []string
	// Held are the nodes that would be candidates but are held (policy.HoldKey), in
	// rollout order.
	Held []string
	// Stopped are the nodes Options.Stopped names, in rollout order; those not
	// otherwise unavailable or failing count against MaxUnavailable.
	Stopped []string
	// Window is the maintenance windows' state at Options.Now (Open for a pool without
	// windows); Gate is Options.Gate.
	Window policy.State
	Gate   string
	// Stage are the nodes to ask to stage StageImage now (nodeanno.StageImageKey),
	// Staging every node that must stage it before it is targeted and has not yet
	// (those asked included), both in rollout order (Options.Stage).
	StageImage string
	Stage      []string
	Staging    []string
	// Unstaged are the candidates asked to stage StageImage whose agent does not stage
	// (it publishes no nodeanno.CapabilityStageOSImage and answers nothing): they are
	// targeted without staging, and download the image after their drain.
	Unstaged []string
	// Skipped explains every other node, in rollout order (none with Options.Brief).
	Skipped []Skip
	// Wait says why candidates are left waiting, or that the pool is paused; it is
	// empty when every candidate is targeted.
	Wait string
}

// EventReason is the reason of the Event MCO emits on the pool when it targets nodes.
const EventReason = "SetDesiredConfig"

// EventMessage is the message of that Event, as MCO words it: "Targeted node N to
// MachineConfig: X" for one node, "Set target for K nodes to MachineConfig: X" for more;
// "" when the step targets nothing.
func (s Step) EventMessage() string {
	switch len(s.Targets) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("Targeted node %s to MachineConfig: %s", s.Targets[0], s.Target)
	}
	return fmt.Sprintf("Set target for %d nodes to MachineConfig: %s", len(s.Targets), s.Target)
}

// Plan computes the next step of the pool's rollout over nodes, the pool's members:
//  1. the target is opts.Target, else the pool's spec.configuration.name;
//  2. capacity is MaxUnavailable minus the nodes that are Unavailable, minus the
//     nodes that are failing to reach the target;
//  3. candidates are the Ready, schedulable nodes whose desired config is not the
//     target; failing (Degraded, Unreconcilable) nodes are candidates like any other;
//  4. a paused pool gets no targets; otherwise the first capacity candidates in
//     rollout order (see Order) are the targets, fewer while a canary is held.
//
// The policy (Options.Policy, Now, Gate) adds: held nodes are not candidates; outside
// the windows or while a gate holds, there are no targets and no retries.
//
// Plan never targets a node that already targets the config, and the same nodes in any
// order give the same step. Errors: an invalid maxUnavailable, a negative canary, a
// retry of a node not in nodes, no target (ErrNoTarget), a node priority that does not
// parse, windows without Now.
func Plan(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, opts Options) (Step, error) {
	return plan(nil, pool, nodes, opts)
}

// plan is Plan, reading nodes through c.
func plan(c *Memo, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, opts Options) (Step, error) {
	target, err := targetOf(pool, opts)
	if err != nil {
		return Step{}, err
	}
	ms, release, err := snapshotWith(c, nodes, opts.Policy.Order)
	defer release() // the step holds none of the members: names and messages only
	if err != nil {
		return Step{}, fmt.Errorf("machineconfigpool %s: %w", pool.Name, err)
	}
	budget, err := MaxUnavailable(pool, len(ms))
	if err != nil {
		return Step{}, err
	}
	retry, err := retrySet(pool, ms, opts)
	if err != nil {
		return Step{}, err
	}
	if !opts.Policy.Windows.Always() && opts.Now.IsZero() {
		return Step{}, fmt.Errorf("machineconfigpool %s: maintenance windows need the time to plan at", pool.Name)
	}
	window := opts.Policy.Windows.At(opts.Now)
	closed := ""
	switch {
	case opts.Gate != "":
		closed = "held by a health gate: " + opts.Gate
	case !window.Open:
		closed = "outside the maintenance windows: " + window.Describe(opts.Now)
	}
	d := decide(ms, target, budget, pool.Spec.Paused, opts.Canary, retry, opts.Stage, opts.Stopped)
	if closed != "" {
		d.closed, d.closedReason = closed, SkipWindow
		if opts.Gate != "" {
			d.closedReason = SkipGate
		}
		d.retry = nil
		d.choose()
	}
	s := d.step(pool.Name, ms, retry, !opts.Brief)
	s.Window, s.Gate = window, opts.Gate
	return s, nil
}

// RollbackTarget is the rendered config a rollback of the pool returns to: the last
// config every node reached (status.configuration), while the pool is moving to a
// newer one. The error says why there is nothing to roll back to.
func RollbackTarget(pool *mcfgv1.MachineConfigPool) (string, error) {
	prev, cur := pool.Status.Configuration.Name, pool.Spec.Configuration.Name
	switch {
	case prev == "":
		return "", fmt.Errorf("machineconfigpool %s: status.configuration is empty: no rendered config has completed on every node yet, so there is nothing to roll back to", pool.Name)
	case prev == cur:
		return "", fmt.Errorf("machineconfigpool %s: every node already runs %s (status.configuration equals spec.configuration); roll back by changing or removing the MachineConfig that introduced it", pool.Name, cur)
	}
	return prev, nil
}

func targetOf(pool *mcfgv1.MachineConfigPool, opts Options) (string, error) {
	if opts.Canary < 0 {
		return "", fmt.Errorf("machineconfigpool %s: canary %d is negative; use 0 for no canary or the number of nodes to update first", pool.Name, opts.Canary)
	}
	if opts.Target != "" {
		return opts.Target, nil
	}
	if t := pool.Spec.Configuration.Name; t != "" {
		return t, nil
	}
	return "", fmt.Errorf("machineconfigpool %s: spec.configuration.name is empty: %w yet; wait until the pool is rendered, or give a target", pool.Name, ErrNoTarget)
}

func retrySet(pool *mcfgv1.MachineConfigPool, ms []*member, opts Options) (map[string]bool, error) {
	if len(opts.Retry) == 0 {
		return nil, nil
	}
	known := make(map[string]bool, len(ms))
	for _, m := range ms {
		known[m.name] = true
	}
	set := make(map[string]bool, len(opts.Retry))
	for _, name := range opts.Retry {
		if !known[name] {
			return nil, fmt.Errorf("machineconfigpool %s: cannot retry node %s: it is not a member of the pool", pool.Name, name)
		}
		set[name] = true
	}
	return set, nil
}

// decision is one step computed over members in rollout order.
type decision struct {
	target string
	budget int
	paused bool

	unavailable     []*member
	failingAtTarget []*member
	candidates      []*member
	capacity        int // before the canary limit
	limit           int // after it

	canary                 bool // the canary phase is on
	canaryNeed, canaryDone int
	targeting              int // nodes whose desired config is the target

	targets []*member
	retry   []*member
	held    []*member // candidates but for their hold

	stopped     []*member         // Options.Stopped
	stoppedWhy  map[string]string // Options.Stopped
	stoppedFree int               // of stopped, those counted for it alone

	stage     *Stage
	staging   []*member // candidates but for the OS image they have not staged
	stageNext []*member // of staging, those to ask to stage now
	unstaged  []*member // candidates whose agent does not stage (Stage.fallsBack)

	closed       string     // why the policy lets no node start (window, gate)
	closedReason SkipReason // SkipWindow or SkipGate

	wait string // waitMessage, once computed
}

func decide(ms []*member, target string, budget int, paused bool, canary int, retry map[string]bool, stage *Stage, stopped map[string]string) decision {
	d := decision{target: target, budget: budget, paused: paused, stage: stage, stoppedWhy: stopped}
	if canary > 0 {
		d.canaryNeed = min(canary, len(ms))
	}
	for _, m := range ms {
		if m.unavailable() {
			d.unavailable = append(d.unavailable, m)
		}
		if _, stop := stopped[m.name]; stop {
			d.stopped = append(d.stopped, m)
			if !m.unavailable() && !(m.desired == target && m.failing()) {
				d.stoppedFree++
			}
			if m.desired == target {
				d.targeting++
				if m.done() {
					d.canaryDone++
				}
				if m.failing() {
					d.failingAtTarget = append(d.failingAtTarget, m)
				}
			}
			continue
		}
		if m.desired == target {
			d.targeting++
			if m.done() {
				d.canaryDone++
			}
			if m.failing() {
				d.failingAtTarget = append(d.failingAtTarget, m)
				if retry[m.name] && !paused {
					d.retry = append(d.retry, m)
				}
			}
			continue
		}
		switch {
		case m.ready() && m.held:
			d.held = append(d.held, m)
		case m.ready() && stage.needsStage(m) && !stage.staged(m) && stage.fallsBack(m):
			d.unstaged = append(d.unstaged, m)
			d.candidates = append(d.candidates, m)
		case m.ready() && stage.needsStage(m) && !stage.staged(m):
			d.staging = append(d.staging, m)
		case m.ready():
			d.candidates = append(d.candidates, m)
		}
	}
	d.choose()
	d.stageStep()
	return d
}

// choose computes the capacity, the canary limit and the targets from the counts.
func (d *decision) choose() {
	d.capacity = max(d.budget-len(d.unavailable)-len(d.failingAtTarget)-d.stoppedFree, 0)
	d.limit, d.canary, d.targets, d.wait = 0, false, nil, ""
	if d.paused || d.closed != "" {
		return
	}
	d.limit = d.capacity
	if d.canaryDone < d.canaryNeed {
		d.canary = true
		d.limit = min(d.limit, max(d.canaryNeed-d.targeting, 0))
	}
	d.targets = d.candidates[:min(d.limit, len(d.candidates))]
}

// advance moves the decision past its wave when nothing but the wave changes the
// nodes, as in a forecast once the first wave has completed: the targets reach the
// target config and the next targets are chosen, without looking at every node again.
func (d *decision) advance() {
	freed := false
	for _, m := range d.targets {
		freed = freed || m.unavailable()
		m.current, m.desired, m.state, m.reason = d.target, d.target, nodeanno.StateDone, ""
	}
	if freed {
		// A node that had never had a config counted as unavailable until now.
		d.unavailable = slices.DeleteFunc(d.unavailable, func(m *member) bool { return !m.unavailable() })
	}
	n := len(d.targets)
	d.candidates = d.candidates[n:]
	d.targeting += n
	d.canaryDone += n
	d.retry = nil
	d.choose()
}

// step is the decision as a Step; explain fills Step.Skipped.
func (d *decision) step(pool string, ms []*member, retry map[string]bool, explain bool) Step {
	s := Step{
		Pool:            pool,
		Target:          d.target,
		Paused:          d.paused,
		MaxUnavailable:  d.budget,
		Unavailable:     names(d.unavailable),
		FailingAtTarget: names(d.failingAtTarget),
		Capacity:        d.capacity,
		Canary:          d.canary,
		Targets:         names(d.targets),
		Retry:           names(d.retry),
		Held:            names(d.held),
		Stopped:         names(d.stopped),
		Stage:           names(d.stageNext),
		Staging:         names(d.staging),
		Unstaged:        names(d.unstaged),
	}
	if d.stage != nil {
		s.StageImage = d.stage.Image
	}
	if len(d.targets) < len(d.candidates) {
		s.Wait = d.waitMessage()
	}
	if n := len(d.staging); n > 0 && s.Wait == "" && len(d.targets) == 0 {
		s.Wait = fmt.Sprintf("staging the OS image %s before the drain: %d nodes to stage (%s), at most %d at once",
			d.stage.Image, n, joinNames(d.staging), d.stage.Parallel)
	}
	for _, m := range d.targets {
		m.chosen = true
	}
	for _, m := range d.retry {
		m.chosen = true
	}
	if !explain {
		return s
	}
	s.Skipped = make([]Skip, 0, len(ms)-len(d.targets)-len(d.retry))
	for _, m := range ms {
		if m.chosen {
			continue
		}
		sk := d.skip(m)
		if retry[m.name] {
			sk.Message += "; retry ignored: " + d.retryRefusal(m)
		}
		s.Skipped = append(s.Skipped, sk)
	}
	return s
}

// skip explains why m is not targeted.
func (d *decision) skip(m *member) Skip {
	if why, ok := d.stoppedWhy[m.name]; ok {
		return Skip{Node: m.name, Reason: SkipStopped, Message: why}
	}
	switch {
	case m.desired == d.target:
		return Skip{Node: m.name, Reason: SkipAtTarget, Message: d.atTargetMessage(m)}
	case !m.ready():
		return Skip{Node: m.name, Reason: SkipNotReady, Message: m.readyErr.Error() + "; it becomes a candidate once it is Ready and schedulable"}
	case m.held && m.holdErr != nil:
		return Skip{Node: m.name, Reason: SkipHeld, Message: m.holdErr.Error()}
	case m.held:
		return Skip{Node: m.name, Reason: SkipHeld, Message: "held by annotation " + policy.HoldKey + "=true; remove it to let the node update"}
	case d.stage.needsStage(m) && !d.stage.staged(m) && !d.stage.fallsBack(m):
		return Skip{Node: m.name, Reason: SkipStaging, Message: d.stagingMessage(m)}
	case d.paused:
		return Skip{Node: m.name, Reason: SkipPaused, Message: d.waitMessage()}
	case d.closed != "":
		return Skip{Node: m.name, Reason: d.closedReason, Message: d.waitMessage()}
	case d.canary && d.limit < d.capacity:
		return Skip{Node: m.name, Reason: SkipCanary, Message: d.waitMessage()}
	}
	return Skip{Node: m.name, Reason: SkipNoCapacity, Message: d.waitMessage()}
}

// stagingMessage says where m is in staging the target's OS image.
func (d *decision) stagingMessage(m *member) string {
	switch {
	case d.paused:
		return "must stage the OS image " + d.stage.Image + " before it is targeted; " + d.waitMessage()
	case m.stageImage == d.stage.Image || slices.Contains(d.stageNext, m):
		return "staging the OS image " + d.stage.Image + " before its drain; it is targeted once staged"
	}
	return fmt.Sprintf("waits its turn to stage the OS image %s (at most %d nodes stage at once)", d.stage.Image, d.stage.Parallel)
}

func (d *decision) atTargetMessage(m *member) string {
	switch {
	case m.done():
		return "done at " + d.target
	case m.failing():
		msg := fmt.Sprintf("failed to update to %s (state %s)", d.target, m.state)
		if m.reason != "" {
			msg += ": " + m.reason
		}
		return msg
	case m.state == "":
		return "targets " + d.target + "; its agent has not picked the update up yet"
	}
	return fmt.Sprintf("updating to %s (state %s)", d.target, m.state)
}

func (d *decision) retryRefusal(m *member) string {
	switch {
	case d.paused:
		return "the pool is paused"
	case m.desired != d.target:
		return "it does not target " + d.target + " yet"
	}
	return "its update has not failed"
}

// waitMessage says why candidates wait. A paused pool uses MCO's Updating message.
func (d *decision) waitMessage() string {
	if d.wait == "" {
		d.wait = d.newWaitMessage()
	}
	return d.wait
}

func (d *decision) newWaitMessage() string {
	if d.paused {
		return pausedMessage(d.target)
	}
	if d.closed != "" {
		return d.closed
	}
	if d.canary && d.limit < d.capacity {
		return fmt.Sprintf("waiting for the canary: %d of %d canary nodes are done at %s", d.canaryDone, d.canaryNeed, d.target)
	}
	msg := fmt.Sprintf("waiting for capacity: maxUnavailable is %d and %d nodes are unavailable", d.budget, len(d.unavailable))
	if len(d.unavailable) > 0 {
		msg += " (" + joinNames(d.unavailable) + ")"
	}
	if n := len(d.failingAtTarget); n > 0 {
		msg += fmt.Sprintf(", %d failing at %s (%s)", n, d.target, joinNames(d.failingAtTarget))
	}
	if len(d.stopped) > 0 {
		msg += fmt.Sprintf(", %d stopped by a failed hook (%s)", len(d.stopped), joinNames(d.stopped))
	}
	return msg
}

func names(ms []*member) []string {
	if len(ms) == 0 {
		return nil
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// joinNames lists up to five names, then how many more.
func joinNames(ms []*member) string {
	const shown = 5
	ns := names(ms[:min(len(ms), shown)])
	s := strings.Join(ns, ", ")
	if len(ms) > shown {
		s += fmt.Sprintf(" and %d more", len(ms)-shown)
	}
	return s
}
