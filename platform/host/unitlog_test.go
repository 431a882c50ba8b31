package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUnitLogTail: journalctl runs by its path under the root, through the runner, with
// --sync first; its lines come back in order, "-- No entries --" as none, a failure with
// its output, and a host without journalctl as ErrNoJournalctl.
func TestUnitLogTail(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	var calls []string
	out, fail := "", false
	run := func(_ context.Context, r, name string, args ...string) ([]byte, error) {
		calls = append(calls, r+" "+name+" "+strings.Join(args, " "))
		if fail && args[0] != "--sync" {
			return []byte("Failed to open journal\n"), errors.New("exit status 1")
		}
		return []byte(out), nil
	}
	l := NewUnitLog(root, run)
	if _, err := l.Tail(ctx, "foo.service", 5); !errors.Is(err, ErrNoJournalctl) || len(calls) != 0 {
		t.Fatalf("without journalctl: %v, calls %v", err, calls)
	}
	p := filepath.Join(root, JournalctlPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	out = "one\ntwo\n"
	lines, err := l.Tail(ctx, "foo.service", 5)
	if err != nil || !slices.Equal(lines, []string{"one", "two"}) {
		t.Fatalf("Tail = %q, %v", lines, err)
	}
	want := []string{root + " /usr/bin/journalctl --sync", root + " /usr/bin/journalctl -u foo.service -n 5 --no-pager -o cat"}
	if !slices.Equal(calls, want) {
		t.Fatalf("ran %q, want %q", calls, want)
	}
	out = "-- No entries --\n"
	if lines, err := l.Tail(ctx, "foo.service", 5); err != nil || lines != nil {
		t.Fatalf("no entries: %q, %v", lines, err)
	}
	fail = true
	if _, err := l.Tail(ctx, "foo.service", 5); err == nil || !strings.Contains(err.Error(), "Failed to open journal") {
		t.Fatalf("a failing journalctl: %v", err)
	}
	if _, err := l.Tail(ctx, "/etc/systemd/system/foo.service", 5); err == nil {
		t.Fatal("a path was taken for a unit name")
	}
}
