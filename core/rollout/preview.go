package rollout

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// DiffFunc predicts what a node does to go from rendered config from to rendered config
// to: typically configdiff.Compute over the two configs, then disruption.Evaluate under
// the cluster's node disruption policy. from is "" for a node that has never had a
// config. Preview calls it once per distinct (from, to).
type DiffFunc func(from, to string) (disruption.Decision, error)

// Forecast is the whole rollout as Preview predicts it.
type Forecast struct {
	Pool           string
	Target         string
	MaxUnavailable int
	// Paused says the pool is paused: the forecast is what happens once it resumes.
	Paused bool
	// AtTarget are the nodes already Done at the target, in rollout order.
	AtTarget []string
	// InFlight are the nodes whose update is under way now (targeted, not Done, not
	// failed), in rollout order. The forecast assumes they finish: with the first wave,
	// or before it when they hold all of maxUnavailable (Wave.AfterInFlight). A node in
	// flight to a config other than the target is also in a later wave.
	InFlight []string
	// Waves are the steps in order, each assumed to complete before the next.
	Waves []Wave
	// Blocked are the nodes the rollout would not bring to the target, and why: not
	// Ready or cordoned by an administrator, failed at the target, or starved of
	// capacity by such nodes.
	Blocked []Skip
}

// Wave is one step of a forecast.
type Wave struct {
	// Canary says the wave is the canary (Options.Canary).
	Canary bool
	// AfterInFlight says the wave is not the next step: nothing can be targeted until
	// the updates in flight (Forecast.InFlight) finish, and this wave starts then. Only
	// the first wave can have it; without it the first wave is what Plan targets now.
	AfterInFlight bool
	// Nodes are retried nodes first, then new targets in rollout order.
	Nodes []NodeChange
}

// NodeChange is one node's predicted update.
type NodeChange struct {
	Node string
	Zone string
	// From is the node's current config ("" if it has none); To the target.
	From, To string
	// Retry says the node's failed update is retried (Options.Retry).
	Retry bool
	// Decision is what the node does after writing the change: its post-config
	// actions and whether it drains. Err is set instead when diff failed.
	Decision disruption.Decision
	Err      error
}

// Preview forecasts the pool's rollout: the order in which Plan would target nodes,
// wave after wave, and the predicted disruption of each node from diff. Each wave is
// assumed to complete before the next starts: its nodes reach the target, nodes already
// updating finish (and come back Ready, unless an administrator cordoned them), failed
// nodes stay failed unless retried, and nodes that are not Ready for other reasons stay
// so. Mid-rollout, when the updates in flight leave no node to target now, they are
// assumed to finish first and the waves after them are forecast, the first marked
// AfterInFlight. A paused pool is forecast as if it were resumed, with Paused set.
//
// The policy's update order and holds apply (held nodes are Blocked); its windows and
// gates do not: the forecast is what happens while they let the rollout go.
//
// Errors are Plan's; a diff error is recorded on the node and does not stop the
// forecast.
func Preview(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, opts Options, diff DiffFunc) (Forecast, error) {
	target, err := targetOf(pool, opts)
	if err != nil {
		return Forecast{}, err
	}
	ms, _, err := snapshotWith(nil, nodes, opts.Policy.Order)
	if err != nil {
		return Forecast{}, fmt.Errorf("machineconfigpool %s: %w", pool.Name, err)
	}
	budget, err := MaxUnavailable(pool, len(ms))
	if err != nil {
		return Forecast{}, err
	}
	retry, err := retrySet(pool, ms, opts)
	if err != nil {
		return Forecast{}, err
	}

	f := Forecast{Pool: pool.Name, Target: target, MaxUnavailable: budget, Paused: pool.Spec.Paused}
	for _, m := range ms {
		switch {
		case m.desired == target && m.done():
			f.AtTarget = append(f.AtTarget, m.name)
		case inFlight(m):
			f.InFlight = append(f.InFlight, m.name)
		}
	}
	predict := memo(diff)
	record := func(d *decision) {
		w := Wave{Canary: d.canary}
		for _, m := range d.retry {
			w.Nodes = append(w.Nodes, change(m, target, true, predict))
		}
		for _, m := range d.targets {
			w.Nodes = append(w.Nodes, change(m, target, false, predict))
		}
		f.Waves = append(f.Waves, w)
	}
	// The first wave starts from the nodes as they are. Once it has completed, every
	// node is Done, failing, not Ready or without any config yet, and stays so until
	// targeted: each later wave only moves its own nodes to the target, which advance
	// follows without going over every node again (NaiveForecast in the tests is the
	// reference).
	d := decide(ms, target, budget, false, opts.Canary, retry, nil, opts.Stopped)
	after := false
	if len(d.targets) == 0 && len(d.retry) == 0 && len(f.InFlight) > 0 {
		// Mid-rollout the updates in flight may hold all of maxUnavailable: what comes
		// next is what follows once they finish, not "nothing".
		complete(ms, d, target)
		d = decide(ms, target, budget, false, opts.Canary, retry, nil, opts.Stopped)
		after = true
	}
	if len(d.targets) > 0 || len(d.retry) > 0 {
		record(&d)
		f.Waves[0].AfterInFlight = after
		complete(ms, d, target)
		d = decide(ms, target, budget, false, opts.Canary, nil, nil, opts.Stopped)
		for len(d.targets) > 0 {
			record(&d)
			d.advance()
		}
	}
	for _, m := range ms {
		if m.desired == target && m.done() {
			continue
		}
		f.Blocked = append(f.Blocked, d.skip(m))
	}
	return f, nil
}

// inFlight says m's update is under way: targeted at a config, its agent not Done
// with it and not failed. complete finishes exactly these.
func inFlight(m *member) bool {
	return m.desired != "" && !m.done() && !m.failing()
}

func change(m *member, target string, retried bool, predict DiffFunc) NodeChange {
	c := NodeChange{Node: m.name, Zone: m.zone, From: m.current, To: target, Retry: retried}
	c.Decision, c.Err = predict(m.current, target)
	return c
}

// complete advances the simulation past a wave: its nodes and every node that was
// updating reach their desired config.
func complete(ms []*member, d decision, target string) {
	for _, m := range d.targets {
		m.desired = target
		m.state = nodeanno.StateWorking
	}
	for _, m := range d.retry {
		m.state = nodeanno.StateWorking
	}
	for _, m := range ms {
		if !inFlight(m) {
			continue
		}
		m.current, m.state, m.reason = m.desired, nodeanno.StateDone, ""
		if nodeanno.AdminCordoned(m.node) {
			m.readyErr = fmt.Errorf("node %s is reporting Unschedulable (cordoned by an administrator, not by mcotui)", m.name)
		} else {
			m.readyErr = nil
		}
	}
}

// memo calls diff once per (from, to); a nil diff predicts nothing.
func memo(diff DiffFunc) DiffFunc {
	type key struct{ from, to string }
	type result struct {
		d   disruption.Decision
		err error
	}
	seen := map[key]result{}
	return func(from, to string) (disruption.Decision, error) {
		if diff == nil {
			return disruption.Decision{}, nil
		}
		k := key{from, to}
		r, ok := seen[k]
		if !ok {
			r.d, r.err = diff(from, to)
			seen[k] = r
		}
		return r.d, r.err
	}
}
