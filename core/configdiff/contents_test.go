package configdiff_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/configdiff"
)

// files is a Config of the files path -> contents source, each of mode 0644 unless
// modes says otherwise.
func files(t *testing.T, src map[string]string, modes map[string]int) configdiff.Config {
	t.Helper()
	var entries []string
	for _, p := range slices.Sorted(maps.Keys(src)) {
		mode := 0o644
		if m, ok := modes[p]; ok {
			mode = m
		}
		entries = append(entries, fmt.Sprintf(`{"path":%q,"contents":{"source":%q},"mode":%d}`, p, src[p], mode))
	}
	return cfg(t, `"storage":{"files":[`+strings.Join(entries, ",")+`]}`)
}

func text(s string) string { return "data:," + url.PathEscape(s) }

func b64(b []byte) string { return "data:;base64," + base64.StdEncoding.EncodeToString(b) }

// TestContentDiffs: a changed text file's contents show as unified hunks decoded from
// both data: URLs (base64 or percent-encoded alike); an added file is all "+" and a
// removed one all "-"; a binary file is named, not printed; a mode-only change has no
// hunks but both modes; a source that is not a data: URL says why it is not shown.
func TestContentDiffs(t *testing.T) {
	old := files(t, map[string]string{
		"/etc/chrony.conf": text("pool 2.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n"),
		"/etc/gone":        text("bye\n"),
		"/etc/blob":        b64([]byte{0x7f, 'E', 'L', 'F', 0, 1, 2}),
		"/etc/mode":        text("x\n"),
		"/etc/remote":      text("a\n"),
	}, nil)
	cur := files(t, map[string]string{
		"/etc/chrony.conf": b64([]byte("server time.example.com iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n")),
		"/etc/new":         text("hello\nworld"),
		"/etc/blob":        b64([]byte{0x7f, 'E', 'L', 'F', 0, 1, 3}),
		"/etc/mode":        text("x\n"),
		"/etc/remote":      "https://example.com/remote",
	}, map[string]int{"/etc/mode": 0o755})
	ch := configdiff.Compute(old, cur)
	got := configdiff.ContentDiffs(old, cur, ch.Files)
	var paths []string
	for _, d := range got {
		paths = append(paths, string(d.Kind)+" "+d.Path)
	}
	if want := []string{"added /etc/new", "changed /etc/blob", "changed /etc/chrony.conf", "changed /etc/mode", "changed /etc/remote", "removed /etc/gone"}; !slices.Equal(paths, want) {
		t.Fatalf("diffs of %v, want %v", paths, want)
	}
	by := map[string]configdiff.FileDiff{}
	for _, d := range got {
		by[d.Path] = d
	}
	for path, want := range map[string][]string{
		"/etc/chrony.conf": {"@@ -1,3 +1,3 @@", "-pool 2.rhel.pool.ntp.org iburst", "+server time.example.com iburst", " driftfile /var/lib/chrony/drift", " makestep 1.0 3"},
		"/etc/new":         {"@@ -0,0 +1,2 @@", "+hello", "+world", `\ No newline at end of file`},
		"/etc/gone":        {"@@ -1 +0,0 @@", "-bye"},
	} {
		if d := by[path]; !slices.Equal(d.Hunks, want) || d.Binary || d.Err != nil || d.Truncated {
			t.Errorf("%s: hunks %q (binary %t, err %v, truncated %t), want %q", path, d.Hunks, d.Binary, d.Err, d.Truncated, want)
		}
	}
	if d := by["/etc/blob"]; !d.Binary || len(d.Hunks) != 0 {
		t.Errorf("binary file: %+v, want Binary and no hunks", d)
	}
	if d := by["/etc/mode"]; d.OldMode != 0o644 || d.NewMode != 0o755 || len(d.Hunks) != 0 || d.Err != nil {
		t.Errorf("mode-only change: %+v, want modes 0644 -> 0755 and no hunks", d)
	}
	if d := by["/etc/remote"]; d.Err == nil || !strings.Contains(d.Err.Error(), "/etc/remote") || len(d.Hunks) != 0 {
		t.Errorf("https source: %+v, want an error naming the file", d)
	}
}

// TestContentDiffsBounded: a long diff is cut at MaxDiffLines and says how long it
// was; a side larger than MaxDiffFile is not decoded at all.
func TestContentDiffsBounded(t *testing.T) {
	var a, b strings.Builder
	for i := range configdiff.MaxDiffLines {
		fmt.Fprintf(&a, "old %d\n", i)
		fmt.Fprintf(&b, "new %d\n", i)
	}
	old := files(t, map[string]string{"/etc/long": b64([]byte(a.String())), "/etc/huge": text("small\n")}, nil)
	cur := files(t, map[string]string{"/etc/long": b64([]byte(b.String())), "/etc/huge": b64([]byte(strings.Repeat("y\n", configdiff.MaxDiffFile)))}, nil)
	got := configdiff.ContentDiffs(old, cur, configdiff.Compute(old, cur).Files)
	by := map[string]configdiff.FileDiff{}
	for _, d := range got {
		by[d.Path] = d
	}
	long := by["/etc/long"]
	if !long.Truncated || len(long.Hunks) != configdiff.MaxDiffLines || long.Lines != 1+2*configdiff.MaxDiffLines {
		t.Errorf("long diff: truncated %t, %d hunk lines of %d; want truncated at %d of %d", long.Truncated, len(long.Hunks), long.Lines, configdiff.MaxDiffLines, 1+2*configdiff.MaxDiffLines)
	}
	if huge := by["/etc/huge"]; huge.Err == nil || !strings.Contains(huge.Err.Error(), "256 KiB") || len(huge.Hunks) != 0 {
		t.Errorf("huge file: %+v, want refused as larger than 256 KiB", huge)
	}
}
