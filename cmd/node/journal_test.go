package node

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/store"
)

// journalWithUpdates writes a journal as the agent would: a finished update and one in
// progress.
func journalWithUpdates(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	j, err := store.Open(filepath.Join(dir, store.FileName), store.Options{Now: func() time.Time {
		clock = clock.Add(1500 * time.Millisecond)
		return clock
	}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := j.Begin(store.Update{Node: "worker-0", From: "rendered-worker-a", To: "rendered-worker-b", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"Prepare", "Snapshot", "ApplyFiles"} {
		if _, err := j.Enter(u.ID, p, p+" message\nsecond line"); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Finish(u.ID, store.ResultDone, "Node worker-0 updated to rendered-worker-b"); err != nil {
		t.Fatal(err)
	}
	u, err = j.Begin(store.Update{Node: "worker-0", From: "rendered-worker-b", To: "rendered-worker-c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Enter(u.ID, "Drain", "Draining the node"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestJournalText(t *testing.T) {
	dir := journalWithUpdates(t)
	code, out, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cmdtest.WantLines(t, out,
		"Update 1  rendered-worker-a -> rendered-worker-b  Done  started ",
		"  Node worker-0 updated to rendered-worker-b",
		"  Prepare ", "1.5s", "Prepare message second line",
		"Update 2  rendered-worker-b -> rendered-worker-c  InProgress",
		"(running)",
	)
}

func TestJournalJSON(t *testing.T) {
	dir := journalWithUpdates(t)
	code, out, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []journalUpdate
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json is not a list of updates: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0].Result != store.ResultDone || got[0].Finished == nil || got[1].Finished != nil {
		t.Fatalf("updates %+v", got)
	}
	if p := got[0].Phases; len(p) != 3 || p[0].Name != "Prepare" || p[0].DurationSeconds != 1.5 || p[0].Finished == nil {
		t.Fatalf("phases %+v", p)
	}
	if got[0].DurationSeconds != 6 {
		t.Fatalf("update took %vs, want 6", got[0].DurationSeconds)
	}
}

func TestJournalMissingOrBadOutput(t *testing.T) {
	code, _, errOut := mcotui.Cmd(t, "journal", "--state-dir", t.TempDir())
	if code != cmdutil.ExitError || !strings.Contains(errOut, "the agent has not run on this host with this state directory") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = mcotui.Cmd(t, "journal", "-o", "yaml")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, `--output "yaml" is not a format; use one of text, json`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestJournalEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := store.Open(filepath.Join(dir, store.FileName), store.Options{}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if code != 0 || out != "No updates in the journal.\n" {
		t.Fatalf("exit %d: %q", code, out)
	}
}

// TestJournalNotAFileIsNotDamaged: a directory or a FIFO where the journal should be is
// said to be so, never "damaged, move the file aside" (a FIFO hung the command).
func TestJournalNotAFileIsNotDamaged(t *testing.T) {
	for kind, make := range map[string]func(string) error{
		"a directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"a FIFO":      func(p string) error { return unix.Mkfifo(p, 0o600) },
	} {
		dir := t.TempDir()
		if err := make(filepath.Join(dir, store.FileName)); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir)
		if code != cmdutil.ExitError || !strings.Contains(errOut, "is "+kind+", not a regular file") ||
			strings.Contains(errOut, "damaged") || strings.Contains(errOut, "aside") {
			t.Errorf("%s: exit %d: %s", kind, code, errOut)
		}
	}
}

// TestJournalNeverNegative: a wall clock set back between a phase's start and end (and
// no monotonic readings to go by) shows as no time, not as a negative duration.
func TestJournalNeverNegative(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	j, err := store.Open(filepath.Join(dir, store.FileName), store.Options{Now: func() time.Time {
		clock = clock.Add(-time.Hour)
		return clock
	}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := j.Begin(store.Update{Node: "worker-0", To: "rendered-worker-b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"Prepare", "Drain"} {
		if _, err := j.Enter(u.ID, p, ""); err != nil {
			t.Fatalf("Enter %s with the clock set back: %v", p, err)
		}
	}
	if err := j.Finish(u.ID, store.ResultDone, ""); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []journalUpdate
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for _, u := range got {
		if u.DurationSeconds < 0 {
			t.Errorf("update %d took %vs", u.ID, u.DurationSeconds)
		}
		for _, p := range u.Phases {
			if p.DurationSeconds < 0 {
				t.Errorf("phase %s took %vs", p.Name, p.DurationSeconds)
			}
		}
	}
	_, text, _ := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if strings.Contains(text, "took -") || strings.Contains(text, " -1h") {
		t.Errorf("negative duration in:\n%s", text)
	}
}

// TestJournalExplainsDamage: `mcotui journal` on a journal whose record no longer
// matches its checksum says it is damaged, where, and how to recover; and the recovery
// it gives works (the agent's Open makes a new journal).
func TestJournalExplainsDamage(t *testing.T) {
	dir := journalWithUpdates(t)
	p := filepath.Join(dir, store.FileName)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(raw, []byte("rendered-worker-c"), []byte("rendered-worker-d")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if code != cmdutil.ExitError {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{p + " is damaged", "does not match its checksum", "mv " + p + " " + p + ".damaged"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q, want it to contain %q", errOut, want)
		}
	}
	if err := os.Rename(p, p+".damaged"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(p, store.Options{}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir); code != 0 || out != "No updates in the journal.\n" {
		t.Fatalf("after the recovery: exit %d: %s%s", code, out, errOut)
	}
}
