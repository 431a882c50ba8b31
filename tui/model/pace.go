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
	// Span is the time the Done nodes are counted over: Window, or less when the
	// rollout began within it (see Paces), so that a rollout minutes old is not
	// taken for a slow one.
	Span time.Duration
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
	span := p.span()
	if span <= 0 {
		return 0
	}
	return float64(p.Done) * float64(time.Hour) / float64(span)
}

func (p Pace) span() time.Duration {
	if p.Span > 0 {
		return p.Span
	}
	return p.Window
}

// Remaining is the time the nodes left take at this pace, 0 when nothing finished
// lately (no pace to go by).
func (p Pace) Remaining() time.Duration {
	if p.Done == 0 {
		return 0
	}
	return time.Duration(float64(p.Left) / float64(p.Done) * float64(p.span()))
}

// String is the pace as the grid's title says it: "worker 16/h, 8 left ~30m".
func (p Pace) String() string {
	switch p.Done {
	case 0:
		return fmt.Sprintf("%s none done in %s, %d left", p.Pool, shortDuration(p.Window), p.Left)
	case 1:
		// One node is no pace: when the rollout began is unknown.
		return fmt.Sprintf("%s 1 done in %s, %d left", p.Pool, shortDuration(p.Window), p.Left)
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
	type seen struct {
		n           int
		first, last time.Time
	}
	done := map[string]*seen{}
	for _, n := range s.nodes {
		if !n.Done() {
			continue
		}
		at := n.Cells[updatedColumn].Since
		if at.Before(since) || at.After(now) {
			continue
		}
		d := done[n.Pool]
		if d == nil {
			d = &seen{first: at, last: at}
			done[n.Pool] = d
		}
		d.n++
		d.first, d.last = minTime(d.first, at), maxTime(d.last, at)
	}
	var out []Pace
	for _, pool := range s.poolList {
		c := s.Counts(pool.Name)
		p := Pace{Pool: pool.Name, Window: window, Left: c.Nodes - c.DoneNow, Updating: c.UpdatingNow}
		if d := done[pool.Name]; d != nil {
			p.Done = d.n
			if d.n >= 2 {
				// Counted from a gap before the first: the rollout began about one
				// mean gap before its first node finished, and a stall since the last
				// lengthens the span, slowing the pace as it should.
				gap := d.last.Sub(d.first) / time.Duration(d.n-1)
				p.Span = min(window, now.Sub(d.first)+gap)
			}
		}
		if p.Rolling() {
			out = append(out, p)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
