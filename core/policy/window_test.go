package policy

import (
	"strings"
	"testing"
	"time"
)

func mustSchedule(t *testing.T, s string) Schedule {
	t.Helper()
	sch, err := ParseSchedule(s)
	if err != nil {
		t.Fatalf("ParseSchedule(%q): %v", s, err)
	}
	return sch
}

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleOpenAndNext(t *testing.T) {
	const berlin = "Europe/Berlin"
	// 2026-12-05 is a Saturday.
	cases := []struct {
		schedule string
		now      string // in Berlin
		open     bool
		next     string // in Berlin
	}{
		{"Sat 22:00-Sun 04:00 Europe/Berlin", "2026-12-05 21:59", false, "2026-12-05 22:00"},
		{"Sat 22:00-Sun 04:00 Europe/Berlin", "2026-12-05 22:00", true, "2026-12-06 04:00"},
		{"Sat 22:00-Sun 04:00 Europe/Berlin", "2026-12-06 03:59", true, "2026-12-06 04:00"},
		{"Sat 22:00-Sun 04:00 Europe/Berlin", "2026-12-06 04:00", false, "2026-12-12 22:00"},
		{"Sat 22:00-Sun 04:00 Europe/Berlin", "2026-12-01 12:00", false, "2026-12-05 22:00"},
		// Every night, overnight.
		{"22:00-04:00 Europe/Berlin", "2026-12-02 02:00", true, "2026-12-02 04:00"},
		{"22:00-04:00 Europe/Berlin", "2026-12-02 12:00", false, "2026-12-02 22:00"},
		// Weekdays, in another zone: 01:00-03:00 UTC is 02:00-04:00 in Berlin in winter.
		{"Mon-Fri 01:00-03:00 UTC", "2026-12-04 02:30", true, "2026-12-04 04:00"},  // Friday
		{"Mon-Fri 01:00-03:00 UTC", "2026-12-05 02:30", false, "2026-12-07 02:00"}, // Saturday
		// A range that wraps past Sunday, and a list.
		{"Fri-Mon 10:00-11:00 UTC", "2026-12-06 11:30", true, "2026-12-06 12:00"}, // Sunday
		{"Tue,Thu 10:00-11:00 UTC", "2026-12-02 10:30", false, "2026-12-03 11:00"},
		// Overlapping windows: open until the later close.
		{"Sat 10:00-12:00 Europe/Berlin; Sat 11:00-15:00 Europe/Berlin", "2026-12-05 11:30", true, "2026-12-05 15:00"},
		// Until midnight.
		{"Sat 20:00-24:00 Europe/Berlin", "2026-12-05 23:59", true, "2026-12-06 00:00"},
	}
	for _, c := range cases {
		s := mustSchedule(t, c.schedule)
		st := s.At(at(t, berlin, c.now))
		want := at(t, berlin, c.next)
		if st.Open != c.open || !st.Next.Equal(want) {
			t.Errorf("%q at %s: open %t next %s; want open %t next %s", c.schedule, c.now, st.Open, st.Next.In(want.Location()), c.open, want)
		}
	}
}

// DST: a window keeps its wall-clock bounds; the nights the clocks change it is an
// hour shorter or longer.
func TestScheduleAcrossDaylightSaving(t *testing.T) {
	s := mustSchedule(t, "Sun 01:00-Sun 05:00 Europe/Berlin")
	// 2026-03-29: clocks go from 02:00 CET to 03:00 CEST.
	spring := s.At(at(t, "UTC", "2026-03-29 00:30"))                          // 01:30 CET: open
	if !spring.Open || !spring.Next.Equal(at(t, "UTC", "2026-03-29 03:00")) { // 05:00 CEST
		t.Errorf("spring forward: %+v, want open until 03:00 UTC", spring)
	}
	// 2026-10-25: clocks go from 03:00 CEST back to 02:00 CET.
	autumn := s.At(at(t, "UTC", "2026-10-24 23:30"))                          // 01:30 CEST: open
	if !autumn.Open || !autumn.Next.Equal(at(t, "UTC", "2026-10-25 04:00")) { // 05:00 CET
		t.Errorf("fall back: %+v, want open until 04:00 UTC", autumn)
	}
	if got := autumn.Next.Sub(at(t, "UTC", "2026-10-24 23:00")); got != 5*time.Hour {
		t.Errorf("the window the night clocks go back lasts %s, want 5h", got)
	}
	// A window that opens in the skipped hour opens when the clocks have jumped.
	gap := mustSchedule(t, "Sun 02:30-Sun 04:00 Europe/Berlin")
	st := gap.At(at(t, "UTC", "2026-03-29 00:00"))
	if st.Open || !st.Next.Equal(at(t, "UTC", "2026-03-29 01:30")) {
		t.Errorf("window in the skipped hour: %+v, want next at 01:30 UTC (03:30 CEST)", st)
	}
}

func TestScheduleDescribe(t *testing.T) {
	s := mustSchedule(t, "Sat 22:00-Sun 04:00 Europe/Berlin")
	now := at(t, "Europe/Berlin", "2026-12-05 18:48")
	if got, want := s.At(now).Describe(now), "next window in 3h12m (Sat 22:00 CET)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	now = at(t, "Europe/Berlin", "2026-12-05 23:00")
	if got, want := s.At(now).Describe(now), "window open until Sun 04:00 CET (in 5h)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	cases := map[string]string{
		"":                                  "no window",
		"Sat 22:00-Sun 04:00":               "unknown time zone",
		"Sat 22:00-Sun 04:00 Mars/Olympus":  "unknown time zone",
		"Sat 22:00-Sun 04:00 Local":         "unknown time zone",
		"Sat 25:00-Sun 04:00 UTC":           "bad time",
		"Sat 22:0-Sun 04:00 UTC":            "bad time",
		"Caturday 22:00-04:00 UTC":          "unknown day",
		"Sat 22:00-Fun 04:00 UTC":           "unknown day",
		"Sat,Sun 22:00-Mon 04:00 UTC":       "one day only",
		"Sat 22:00-Sat 22:00 UTC":           "shorter than a week",
		"22:00 UTC":                         "no time range",
		"Sat 22:00-Sun 04:00 UTC; nonsense": `window "nonsense"`,
	}
	for in, want := range cases {
		_, err := ParseSchedule(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSchedule(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"Sat 22:00-Sun 04:00 Europe/Berlin", "Mon-Fri 01:00-03:00 UTC; 22:00-04:00 UTC", "Fri-Mon 10:00-24:00 America/New_York"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		sch, err := ParseSchedule(s)
		if err != nil {
			return
		}
		st := sch.At(now)
		if st.Next.IsZero() {
			t.Fatalf("%q: a parsed schedule has no next change at %s", s, now)
		}
		if st.Open && !st.Next.After(now) || !st.Open && !st.Next.After(now) {
			t.Fatalf("%q: next change %s not after %s", s, st.Next, now)
		}
		// Just before the change the state is the same; at it, it flips or a window
		// continues.
		if before := sch.At(st.Next.Add(-time.Second)); before.Open != st.Open {
			t.Fatalf("%q: state changed before %s", s, st.Next)
		}
	})
}
