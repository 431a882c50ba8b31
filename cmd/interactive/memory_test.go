package interactive

import "testing"

// A burst is trimmed after, once quiet; steady redrawing is not, until it adds up.
func TestTrimmer(t *testing.T) {
	tr := trimmer{}
	steps := []struct {
		what  string
		total uint64
		trim  bool
	}{
		{"quiet start", 100 << 10, false},
		{"the initial lists", 60 << 20, false},
		{"still listing", 80 << 20, false},
		{"quiet after the lists", 80<<20 + 200<<10, true},
		{"quiet again", 80<<20 + 400<<10, false},
		{"a burst", 110 << 20, false},
		{"quiet after the burst", 110<<20 + 100<<10, true},
	}
	for _, s := range steps {
		if got := tr.observe(s.total); got != s.trim {
			t.Fatalf("%s: trim %v, want %v", s.what, got, s.trim)
		}
	}
	// Redrawing at rest: 200 KiB an interval adds up to a trim only past trimAfter.
	trims := 0
	total := uint64(110<<20 + 100<<10)
	for range 200 {
		total += 200 << 10
		if tr.observe(total) {
			trims++
		}
	}
	if want := 200 * (200 << 10) / trimAfter; trims != want {
		t.Fatalf("%d trims at rest over 200 intervals, want %d", trims, want)
	}
}
