package policy

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"slices"
	"strings"
	"time"
)

// Evidence is what the health gates read, gathered from the cluster by the caller.
type Evidence struct {
	Now time.Time
	// Alerts are Prometheus's alerts; AlertsErr is set instead when they could not be
	// read (Prometheus down, or no Prometheus configured), and then the alert gate
	// holds.
	Alerts    []Alert
	AlertsErr error
	// Updated are the pool's nodes that are done at the target and finished their
	// update within the soak time: the nodes just updated.
	Updated []UpdatedNode

	// Checks are what the health checks read, one per Gates.Checks (health.go).
	Checks []CheckResult
	// Unhealthy are the nodes given the pool's target that are unhealthy (HaltUnhealthy).
	Unhealthy []string
	// Pools are the cluster's pools, for the Sequence; PoolsErr when they could not be read.
	Pools    []*mcfgv1.MachineConfigPool
	PoolsErr error
	// Busy says, by pool name, whether a pool of the exclusive group has a node
	// updating as its nodes show it; a pool not in it is judged by its status (PoolBusy).
	Busy map[string]bool
}

// Alert is one alert as Prometheus's /api/v1/alerts reports it.
type Alert struct {
	Labels   map[string]string
	State    string // firing, pending
	ActiveAt time.Time
}

// UpdatedNode is a node just updated, and the gated pods on it.
type UpdatedNode struct {
	Name string
	// UpdatedAt is when its update finished; ReadySince when it last became Ready
	// (zero while it is not Ready).
	UpdatedAt, ReadySince time.Time
	Pods                  []Pod // the pods on it matching the pod gate's selector
}

// Pod is a gated pod: ReadySince is when it last became Ready, zero while it is not.
type Pod struct {
	Namespace, Name string
	ReadySince      time.Time
}

// JustUpdated says whether a node that finished its update at updatedAt (and has been
// Ready since readySince, zero if it is not) is still within the soak time at now: the
// gates look at it and its pods.
func (g Gates) JustUpdated(now, updatedAt, readySince time.Time) bool {
	return readySince.IsZero() || now.Sub(later(updatedAt, readySince)) < g.Soak
}

// Check says why the gates hold the rollout, or "" when they pass. The reason names
// what fails: the firing alert, the node or pod not Ready long enough and when it will
// be, or why the alerts could not be read. Wait is how long until a soak is over, when
// that is all that holds (0 otherwise), so that the caller can look again then.
func (g Gates) Check(e Evidence) (reason string, wait time.Duration) {
	if g.Alerts != nil {
		if e.AlertsErr != nil {
			return fmt.Sprintf("cannot evaluate the alert gate (%s): %v", matchersString(g.Alerts), e.AlertsErr), 0
		}
		var firing []string
		for _, a := range e.Alerts {
			if a.State == "firing" && MatchAll(g.Alerts, a.Labels) {
				firing = append(firing, a.Labels["alertname"])
			}
		}
		if len(firing) > 0 {
			slices.Sort(firing)
			firing = slices.Compact(firing)
			return fmt.Sprintf("alert %s firing (gate %s)", joinShort(firing), matchersString(g.Alerts)), 0
		}
	}
	if r := g.checkHealth(e.Checks); r != "" {
		return r, 0
	}
	var waits []string
	var longest time.Duration
	// The reason names instants, not "for 3m of 10m": it goes into a pool condition,
	// which must not change (and be written) at every look.
	soaking := func(what string, since time.Time) {
		until := since.Add(g.Soak)
		waits = append(waits, fmt.Sprintf("%s soaks until %s (Ready since %s, soak %s)", what, clock(until), clock(since), g.Soak))
		longest = max(longest, until.Sub(e.Now))
	}
	for _, n := range e.Updated {
		if n.ReadySince.IsZero() {
			return fmt.Sprintf("node %s, just updated, is not Ready", n.Name), 0
		}
		if since := later(n.UpdatedAt, n.ReadySince); e.Now.Sub(since) < g.Soak {
			soaking("node "+n.Name, since)
		}
		if g.Pods == nil {
			continue
		}
		for _, p := range n.Pods {
			if p.ReadySince.IsZero() {
				return fmt.Sprintf("pod %s/%s on node %s, just updated, is not Ready (gate %s)", p.Namespace, p.Name, n.Name, g.Pods), 0
			}
			if since := later(n.UpdatedAt, p.ReadySince); e.Now.Sub(since) < g.Soak {
				soaking(fmt.Sprintf("pod %s/%s on node %s", p.Namespace, p.Name, n.Name), since)
			}
		}
	}
	if len(waits) > 0 {
		return "soaking: " + joinShort(waits), longest
	}
	return "", 0
}

// clock prints an instant in UTC to the second.
func clock(t time.Time) string { return t.UTC().Format("15:04:05Z") }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func matchersString(ms []Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// joinShort lists up to three items, then how many more.
func joinShort(items []string) string {
	const shown = 3
	s := strings.Join(items[:min(len(items), shown)], ", ")
	if len(items) > shown {
		s += fmt.Sprintf(" and %d more", len(items)-shown)
	}
	return s
}
