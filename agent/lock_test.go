package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSecondAgentRefusedAtStart: the state directory's lock is held for the life of the
// holder; a second taker is refused, naming the holder, and succeeds once it is gone.
func TestSecondAgentRefusedAtStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockStateDir(dir)
	if err == nil || !strings.Contains(err.Error(), "is in use by another agent (process "+strconv.Itoa(os.Getpid())+" holds agent.lock)") {
		t.Fatalf("second lock: %v", err)
	}
	first.Close()
	again, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("after the first holder went: %v", err)
	}
	again.Close()
}
