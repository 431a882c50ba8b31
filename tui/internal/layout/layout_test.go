package layout

import (
	"strings"
	"testing"
	"time"

	// Registers -update, so that `go test ./tui/... -update` runs in every package.
	_ "github.com/charmbracelet/x/exp/golden"
	"k8s.io/apimachinery/pkg/util/duration"
)

// TestAppendAgeMatchesKubectl: ages read exactly as kubectl and oc print them.
func TestAppendAgeMatchesKubectl(t *testing.T) {
	for _, d := range []time.Duration{
		-5 * time.Second, -time.Second, 0, 59 * time.Second, 119 * time.Second, 2 * time.Minute,
		5*time.Minute + 30*time.Second, 9*time.Minute + 59*time.Second, 10 * time.Minute,
		179 * time.Minute, 3 * time.Hour, 4*time.Hour + 42*time.Minute, 8 * time.Hour, 47 * time.Hour,
		48 * time.Hour, 6*24*time.Hour + 15*time.Hour, 8 * 24 * time.Hour, 400 * 24 * time.Hour,
		3*365*24*time.Hour + 24*time.Hour, 9 * 365 * 24 * time.Hour,
	} {
		if got, want := Age(d), duration.HumanDuration(d); got != want {
			t.Errorf("Age(%v) = %q, kubectl says %q", d, got, want)
		}
	}
}

func TestLayout(t *testing.T) {
	cols := []Column{
		{Title: "NAME", Min: 10, Max: 20},
		{Title: "LONGTITLE", Short: "LT", Min: 1},
		{Title: "CONFIG", Min: 8, Max: 30, Drop: 2},
		{Title: "AGE", Min: 4, Drop: 1},
	}
	tests := []struct {
		total int
		want  []int
		short bool
	}{
		{100, []int{20, 9, 30, 4}, false}, // room for all, grown to Max
		{40, []int{13, 9, 11, 4}, false},  // long titles fit; the spare is shared
		{27, []int{10, 2, 8, 4}, true},    // short titles
		{18, []int{10, 2, 0, 4}, true},    // CONFIG dropped first
		{12, []int{10, 2, 0, 0}, true},    // then AGE; never NAME or LT: the caller clips
	}
	for _, tt := range tests {
		got, short := Layout(cols, tt.total, 1)
		if !equal(got, tt.want) || short != tt.short {
			t.Errorf("Layout(%d) = %v short %v, want %v short %v", tt.total, got, short, tt.want, tt.short)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFit(t *testing.T) {
	for _, tt := range []struct {
		s    string
		w    int
		want string
	}{
		{"worker", 8, "worker  "},
		{"worker-00001", 8, "worker-…"},
		{"ノード", 4, "ノ… "},
		{"x", 0, ""},
	} {
		var b strings.Builder
		Fit(&b, tt.s, tt.w)
		if b.String() != tt.want {
			t.Errorf("Fit(%q, %d) = %q, want %q", tt.s, tt.w, b.String(), tt.want)
		}
	}
	if got := Lines("a\nb\nc", 2); got != "a\nb" {
		t.Errorf("Lines cut = %q", got)
	}
	if got := Lines("a", 3); got != "a\n\n" {
		t.Errorf("Lines pad = %q", got)
	}
}

// TestNameStaysDistinct: OpenShift's node names share 35 of their 40 characters; cut to
// any width they must still tell the nodes apart, and keep the part that does.
func TestNameStaysDistinct(t *testing.T) {
	names := []string{
		"ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12",
		"ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz13",
		"ci-ln-ds73n5t-72292-9xsm9-worker-b-q8k2m",
		"ci-ln-ds73n5t-72292-9xsm9-worker-c-t227w",
	}
	pre, suf := 33, 0 // "ci-ln-ds73n5t-72292-9xsm9-worker-", up to the zones
	for _, w := range []int{8, 12, 16, 20, 26, 39, 40} {
		seen := map[string]string{}
		for _, n := range names {
			got := Name(n, w, pre, suf)
			if cells := len([]rune(got)); cells > w {
				t.Errorf("Name(%q, %d) = %q: %d cells", n, w, got, cells)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("width %d: %q and %q both read %q", w, other, n, got)
			}
			seen[got] = n
		}
	}
	for _, tt := range []struct {
		name        string
		w, pre, suf int
		want        string
	}{
		{"ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12", 26, 33, 0, "…2292-9xsm9-worker-a-xyz12"},
		{"ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12", 40, 33, 0, "ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12"},
		// Shared ends (FQDNs): the end goes.
		{"node-17.compute.us-east-1.example.com", 12, 0, 30, "node-17.com…"},
		// A distinct part wider than the column: both its ends stay.
		{"ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12", 8, 6, 0, "…ds7…z12"},
	} {
		if got := Name(tt.name, tt.w, tt.pre, tt.suf); got != tt.want {
			t.Errorf("Name(%q, %d, %d, %d) = %q, want %q", tt.name, tt.w, tt.pre, tt.suf, got, tt.want)
		}
	}
}
