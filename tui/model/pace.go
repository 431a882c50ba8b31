package model

import (
	"fmt"
	"time"

	"github.com/mcotui/mcotui/core/estimate"
)

// Pace is a pool's rollout as the grid's title says it, as k9s's pulse shows a
// resource's rate: the nodes finished lately, how many are left, and the time
// remaining. All three are the pool's estimate's (core/estimate.Compute), the one the
// pools pane and the EST column show, so that the title never disagrees with them.
type Pace struct {
	Pool string
	Est  estimate.Estimate
}

// String is the pace as the grid's title says it, what is left first (the question a
// watching operator asks, and what a narrow title keeps): "worker 8 left ~30m, 16/h",
// "worker 4 left ~7m, none done in 15m", "worker 1 retrying, 3 done in 15m"; what is
// left in core's words (estimate.Progress: a failed node is never "~0s").
func (p Pace) String() string {
	e := p.Est
	s := p.Pool + " " + e.Progress()
	switch e.Pace.Done {
	case 0:
		return s + ", none done in " + estimate.Round(e.Pace.Window)
	case 1:
		// One node is no pace: when the rollout began is unknown.
		return s + ", 1 done in " + estimate.Round(e.Pace.Window)
	}
	rate := e.Pace.PerHour()
	if rate < 10 {
		return s + fmt.Sprintf(", %.1f/h", rate)
	}
	return s + fmt.Sprintf(", %.0f/h", rate)
}

// Paces are the paces of the pools whose rollout is under way (estimate.Rolling), in
// the pools' order, at now.
func (s *Store) Paces(now time.Time) []Pace {
	var out []Pace
	for _, pool := range s.poolList {
		if est, _, _ := s.Estimate(pool.Name, now); est.Rolling() {
			out = append(out, Pace{Pool: pool.Name, Est: est})
		}
	}
	return out
}
