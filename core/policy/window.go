package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// The zone database is built in: a static binary in a base-less image has no
	// /usr/share/zoneinfo, and a window must not change meaning with the host it runs on.
	_ "time/tzdata"
)

// Window is one weekly maintenance window: it opens at Start on each of Days and closes
// Span days later at End, in wall-clock time of Zone.
type Window struct {
	Days  [7]bool // by time.Weekday
	Start int     // minutes after midnight
	End   int     // minutes after midnight, on the day Span days after the start
	Span  int     // 0: closes the day it opens; 1..6: that many days later
	Zone  *time.Location
	text  string
}

// Schedule is a set of windows; the zero Schedule has none and is always open.
type Schedule []Window

// Always says whether the schedule places no limit.
func (s Schedule) Always() bool { return len(s) == 0 }

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseSchedule reads windows separated by ";", each
//
//	[DAYS] HH:MM-[DAY] HH:MM ZONE
//
// DAYS is a day (Sat), a range (Mon-Fri, wrapping past Sunday: Fri-Mon) or a list
// (Sat,Sun); without it the window opens every day. An end DAY makes a window span
// days (Sat 22:00-Sun 04:00), and then the window opens on one day only. Without an
// end day, an end at or before the start closes the next day (22:00-04:00). ZONE is an
// IANA name (Europe/Berlin) or UTC.
func ParseSchedule(s string) (Schedule, error) {
	var out Schedule
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		w, err := parseWindow(part)
		if err != nil {
			return nil, fmt.Errorf("window %q: %w", part, err)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no window in %q (want e.g. \"Sat 22:00-Sun 04:00 Europe/Berlin\")", s)
	}
	return out, nil
}

func parseWindow(s string) (Window, error) {
	w := Window{text: s}
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return w, fmt.Errorf("want [DAYS] HH:MM-[DAY] HH:MM ZONE")
	}
	zone := fields[len(fields)-1]
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" || zone == "Local" {
		return w, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin, or UTC)", zone)
	}
	w.Zone = loc
	// What is left is "[DAYS ]HH:MM-[DAY ]HH:MM", possibly with spaces around the dash.
	spec := strings.Join(fields[:len(fields)-1], " ")
	from, to, ok := strings.Cut(spec, "-")
	// A day range (Mon-Fri) holds a dash too: the time range's dash is the one after
	// the first time.
	if i := strings.Index(spec, ":"); i >= 0 {
		if j := strings.Index(spec[i:], "-"); j >= 0 {
			from, to, ok = spec[:i+j], spec[i+j+1:], true
		}
	}
	if !ok {
		return w, fmt.Errorf("no time range: want HH:MM-HH:MM")
	}
	startDays, startClock := splitDay(strings.TrimSpace(from))
	endDay, endClock := splitDay(strings.TrimSpace(to))
	if w.Start, err = parseClock(startClock); err != nil {
		return w, err
	}
	if w.End, err = parseClock(endClock); err != nil {
		return w, err
	}
	if startDays == "" {
		for d := range w.Days {
			w.Days[d] = true
		}
	} else if err := parseDays(startDays, &w.Days); err != nil {
		return w, err
	}
	switch {
	case endDay != "":
		end, ok := weekdays[strings.ToLower(endDay)]
		if !ok {
			return w, fmt.Errorf("unknown day %q (want Mon, Tue, ... Sun)", endDay)
		}
		start, n := time.Weekday(0), 0
		for d, on := range w.Days {
			if on {
				start, n = time.Weekday(d), n+1
			}
		}
		if n != 1 {
			return w, fmt.Errorf("a window that ends on another day opens on one day only, not %q", startDays)
		}
		w.Span = (int(end) - int(start) + 7) % 7
		if w.Span == 0 && w.End <= w.Start {
			w.Span = 7
		}
		if w.Span == 7 || (w.Span == 0 && w.End == w.Start) {
			return w, fmt.Errorf("a window is shorter than a week")
		}
	case w.End <= w.Start:
		w.Span = 1
	}
	return w, nil
}

// splitDay splits "Sat 22:00" into "Sat" and "22:00"; "22:00" has no day.
func splitDay(s string) (day, clock string) {
	if i := strings.LastIndex(s, " "); i >= 0 {
		return strings.TrimSpace(s[:i]), s[i+1:]
	}
	return "", s
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || hh > 24 || mm < 0 || mm > 59 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("bad time %q (want HH:MM, 00:00 to 24:00)", s)
	}
	return hh*60 + mm, nil
}

func parseDays(s string, days *[7]bool) error {
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		a, b, isRange := strings.Cut(item, "-")
		from, ok := weekdays[strings.ToLower(strings.TrimSpace(a))]
		if !ok {
			return fmt.Errorf("unknown day %q (want Mon, Tue, ... Sun, a range Mon-Fri or a list Sat,Sun)", a)
		}
		to := from
		if isRange {
			if to, ok = weekdays[strings.ToLower(strings.TrimSpace(b))]; !ok {
				return fmt.Errorf("unknown day %q (want Mon, Tue, ... Sun)", b)
			}
		}
		for d := from; ; d = (d + 1) % 7 {
			days[d] = true
			if d == to {
				break
			}
		}
	}
	return nil
}

func (w Window) String() string { return w.text }

// at is the instant of minutes after midnight on the calendar day y-m-d in the
// window's zone. Wall-clock times that a DST change skips (02:30 on the night clocks
// go forward) fall to the same offset as before the change, an hour later; a time
// that occurs twice (the night they go back) is its first occurrence. So a window
// keeps its wall-clock bounds, and is an hour shorter or longer those two nights, as
// kured's and system-upgrade-controller's windows are.
func (w Window) at(y int, m time.Month, d, minutes int) time.Time {
	return time.Date(y, m, d, minutes/60, minutes%60, 0, 0, w.Zone)
}

// occurrences calls f with the window's openings and closings around t: those that
// open from eight days before t to eight days after it, which covers every window that
// can hold t and the next to open.
func (w Window) occurrences(t time.Time, f func(open, close time.Time)) {
	local := t.In(w.Zone)
	y, m, d := local.Date()
	for off := -8; off <= 8; off++ {
		day := time.Date(y, m, d+off, 12, 0, 0, 0, w.Zone) // noon: never in a DST gap
		if !w.Days[day.Weekday()] {
			continue
		}
		dy, dm, dd := day.Date()
		open := w.at(dy, dm, dd, w.Start)
		close := w.at(dy, dm, dd+w.Span, w.End)
		if close.After(open) {
			f(open, close)
		}
	}
}

// State is what a schedule says at one instant.
type State struct {
	Open bool
	// Next is when it closes, when Open, and when it opens next, when not. Zero for a
	// schedule that is always open.
	Next   time.Time
	Window Window // the window that holds t, or opens next
}

// At says whether t is inside a window: the window that holds it and when it closes
// (the latest close when windows overlap), or else the next one to open.
func (s Schedule) At(t time.Time) State {
	if s.Always() {
		return State{Open: true}
	}
	var st State
	for _, w := range s {
		w.occurrences(t, func(open, close time.Time) {
			switch {
			case !t.Before(open) && t.Before(close):
				if !st.Open || close.After(st.Next) {
					st = State{Open: true, Next: close, Window: w}
				}
			case open.After(t) && !st.Open:
				if st.Next.IsZero() || open.Before(st.Next) {
					st = State{Next: open, Window: w}
				}
			}
		})
	}
	return st
}

// Describe is the state as a user reads it: "window open until Sun 04:00 CEST (in
// 5h59m)", "next window in 3h12m (Sat 22:00 CET)".
func (st State) Describe(now time.Time) string {
	if st.Next.IsZero() {
		return "no maintenance window set"
	}
	when := st.Next.In(st.Window.Zone).Format("Mon 15:04 MST")
	in := st.Next.Sub(now).Truncate(time.Minute)
	if in < time.Minute {
		in = st.Next.Sub(now).Truncate(time.Second)
	}
	if st.Open {
		return fmt.Sprintf("window open until %s (in %s)", when, shortDuration(in))
	}
	return fmt.Sprintf("next window in %s (%s)", shortDuration(in), when)
}

// Settled is the state in words that stay the same until it changes, for a pool
// condition: "window open until Sun 04:00 CET", "next window opens Sat 22:00 CET".
func (st State) Settled() string {
	if st.Next.IsZero() {
		return "no maintenance window set"
	}
	when := st.Next.In(st.Window.Zone).Format("Mon 15:04 MST")
	if st.Open {
		return "window open until " + when
	}
	return "next window opens " + when
}

// shortDuration prints 3h12m rather than 3h12m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
