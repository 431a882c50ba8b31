package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/store"
)

// TestRunbookDamagedJournal follows docs/runbooks/damaged-journal.md on a journal whose
// meta pages were wiped: the runbook's `mcotui journal` prints the error the page quotes,
// its mv moves the file aside, and the state directory then opens as a new journal.
func TestRunbookDamagedJournal(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("docs", "runbooks", "damaged-journal.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Join(strings.Fields(string(data)), " ")
	for _, want := range []string{
		"sudo mcotui journal --state-dir /var/lib/mcotui",
		"sudo mv /var/lib/mcotui/journal.db /var/lib/mcotui/journal.db.damaged",
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("docs/runbooks/damaged-journal.md no longer shows %q: update this test with the runbook", want)
		}
	}

	dir := journalWithUpdates(t)
	path := filepath.Join(dir, store.FileName)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 2*os.Getpagesize()), 0); err != nil { // both meta pages
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// The page quotes the error in its first text block, "..." for the cause and the
	// DaemonSet's path for the journal's.
	quote := regexp.MustCompile("(?s)```text\n(.*?)\n *```").FindStringSubmatch(string(data))
	if quote == nil {
		t.Fatal("docs/runbooks/damaged-journal.md quotes no error in a text block")
	}
	pattern := regexp.QuoteMeta(strings.Join(strings.Fields(quote[1]), " "))
	pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("/rootfs/var/lib/mcotui/journal.db"), regexp.QuoteMeta(path))
	pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("..."), ".*")
	code, _, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if code != cmdutil.ExitError || !regexp.MustCompile(pattern).MatchString(strings.Join(strings.Fields(errOut), " ")) {
		t.Fatalf("mcotui journal on a damaged journal: exit %d: %s\nthe runbook quotes:\n%s", code, errOut, quote[1])
	}

	mv := strings.ReplaceAll("mv /var/lib/mcotui/journal.db /var/lib/mcotui/journal.db.damaged", "/var/lib/mcotui", dir)
	if out, err := exec.CommandContext(t.Context(), "sh", "-c", mv).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", mv, err, out)
	}
	if _, err := os.Stat(path + ".damaged"); err != nil {
		t.Errorf("the damaged journal kept aside: %v", err)
	}
	j, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("the agent's journal after the runbook: %v", err)
	}
	if _, active, err := j.Active(); err != nil || active {
		t.Errorf("the new journal: active update %v, %v; want none", active, err)
	}
	code, out, errOut := mcotui.Cmd(t, "journal", "--state-dir", dir)
	if code != 0 || out != "No updates in the journal.\n" {
		t.Errorf("mcotui journal on the new journal: exit %d: %s%s", code, out, errOut)
	}
}
