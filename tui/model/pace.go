package model

import (
	"fmt"
	"time"
)

// PaceWindow is how far back a pool's pace looks: long enough to hold a few nodes of a
// rollout that takes minutes a node, short enough to show a rollout slowing down.
const PaceWindow = 15 * time.Minute

// Pace is how fast a pool's rollout goes, as k9s's pulse shows a resource's rate:
// nodes that finished their update lately, and how many are left.
type Pace struct {
	Pool string
	// Done is the nodes that finished (Updated at the pool's target) within Window
	// before now.
	Done   int
	Window time.Duration
	// Left is the pool's nodes not yet done.
	Left int
	// Updating is the nodes updating now: a pool with none and nothing done lately is
	// not rolling.
	Updating int
}

// Rolling reports whether the pool's rollout is under way: nodes left, and some
// updating or finished lately.
func (p Pace) Rolling() bool { return p.Left > 0 && (p.Updating > 0 || p.Done > 0) }

// PerHour is the pace in nodes an hour.
func (p Pace) PerHour() float64 {
	if p.Window <= 0 {
		return 0
	}
	return float64(p.Done) * float64(time.Hour) / float64(p.Window)
}

// Remaining is the time the nodes left take at this pace, 0 when nothing finished
// lately (no pace to go by).
func (p Pace) Remaining() time.Duration {
	if p.Done == 0 {
		return 0
	}
	return time.Duration(float64(p.Left) / float64(p.Done) * float64(p.Window))
}

// String is the pace as the grid's title says it: "worker 16/h, 8 left ~30m".
func (p Pace) String() string {
	if p.Done == 0 {
		return fmt.Sprintf("%s none done in %s, %d left", p.Pool, shortDuration(p.Window), p.Left)
	}
	rate := p.PerHour()
	r := fmt.Sprintf("%.0f/h", rate)
	if rate < 10 {
		r = fmt.Sprintf("%.1f/h", rate)
	}
	return fmt.Sprintf("%s %s, %d left ~%s", p.Pool, r, p.Left, shortDuration(p.Remaining()))
}

// shortDuration is d in its two largest units: 1h20m, 15m, 40s.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
		if m := d % time.Hour / time.Minute; m != 0 {
			return fmt.Sprintf("%dh%dm", d/time.Hour, m)
		}
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d.Round(time.Minute)/time.Minute)
	}
	return fmt.Sprintf("%ds", d.Round(time.Second)/time.Second)
}

// Paces are the paces of the pools whose rollout is under way (Pace.Rolling), in the
// pools' order, at now: a node counts as done lately when its Updated condition turned
// True within window before now, at its pool's target. It reads every node once:
// callers cache it.
func (s *Store) Paces(now time.Time, window time.Duration) []Pace {
	since := now.Add(-window)
	done := map[string]int{}
	for _, n := range s.nodes {
		if !n.Done() {
			continue
		}
		if at := n.Cells[updatedColumn].Since; !at.Before(since) && !at.After(now) {
			done[n.Pool]++
		}
	}
	var out []Pace
	for _, pool := range s.poolList {
		c := s.Counts(pool.Name)
		p := Pace{Pool: pool.Name, Window: window, Done: done[pool.Name], Left: c.Nodes - c.DoneNow, Updating: c.UpdatingNow}
		if p.Rolling() {
			out = append(out, p)
		}
	}
	return out
}
