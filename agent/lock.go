package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockFileName is the file in the state directory that the running agent holds locked.
const LockFileName = "agent.lock"

// LockStateDir takes an exclusive lock on the state directory for as long as the
// returned file stays open, which the caller keeps until the process ends. A second
// agent on the same directory is refused at once: two agents would each journal and
// apply updates on one host. The journal's own bbolt lock is held only for the length
// of a transaction, so it does not keep a second agent out. The lock is flock(2) on
// LockFileName: the kernel drops it when the process dies, however it dies, so a crash
// never leaves a stale lock. The holder's pid is written in the file for the message.
func LockStateDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	name := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the state directory: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(name); rerr == nil && strings.TrimSpace(string(b)) != "" {
				holder = "process " + strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("state directory %s is in use by another agent (%s holds %s): one agent per state directory; stop the other one first",
				dir, holder, LockFileName)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Best effort: the pid only improves the message of the agent refused after us.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
