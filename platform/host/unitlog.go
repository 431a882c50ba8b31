package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// JournalctlPath is where the host's journalctl is.
const JournalctlPath = "/usr/bin/journalctl"

// ErrNoJournalctl says the host has no journalctl to read a unit's log with.
var ErrNoJournalctl = errors.New("the host has no " + JournalctlPath + " to read the unit's journal with")

// UnitLog reads units' logs from the host's journal with the host's own journalctl, run
// through a Runner: chrooted into the root when the agent sees the host under a prefix,
// so that it reads the host's journal, not the container's.
type UnitLog struct {
	root string
	run  Runner
}

// NewUnitLog returns the unit log reader of the host under root. A nil run means
// ChrootRunner.
func NewUnitLog(root string, run Runner) *UnitLog {
	if run == nil {
		run = ChrootRunner
	}
	return &UnitLog{root: root, run: run}
}

// Tail returns the last n lines of unit's journal, oldest first: what
// `journalctl -u UNIT -n N --no-pager -o cat` prints, the unit's own output and
// systemd's lines about it. It asks journald to write out what it has received first
// (journalctl --sync): the lines a unit wrote just before its job failed may otherwise
// not be readable yet. A host without journalctl is ErrNoJournalctl.
func (l *UnitLog) Tail(ctx context.Context, unit string, n int) ([]string, error) {
	if err := checkUnitName(unit); err != nil {
		return nil, fmt.Errorf("journal of unit %q: %w", unit, err)
	}
	// The full path, looked up under the root: exec.Command would look a bare name up
	// in the agent's own PATH, before the chroot.
	if st, err := os.Stat(filepath.Join(l.root, JournalctlPath)); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("journal of unit %s: %w", unit, ErrNoJournalctl)
	}
	// Best effort: an old journald without --sync, or one that does not answer, still
	// leaves what it has already written readable.
	_, _ = l.run(ctx, l.root, JournalctlPath, "--sync")
	out, err := l.run(ctx, l.root, JournalctlPath, "-u", unit, "-n", strconv.Itoa(n), "--no-pager", "-o", "cat")
	if err != nil {
		return nil, &ExecError{Command: JournalctlPath + " -u " + unit, Output: string(out), Err: err}
	}
	text := strings.TrimRight(string(out), "\n")
	if text == "" || text == "-- No entries --" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}
