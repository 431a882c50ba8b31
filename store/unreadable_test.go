package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// openAsEnv makes the test binary a helper that opens the journal named by it and
// prints the error: the permission test runs it as another user.
const openAsEnv = "MCOTUI_STORE_TEST_OPEN"

// openChild opens the journal at path and prints what the error is; TestMain calls it.
func openChild(path string) {
	_, err := OpenExisting(path, Options{})
	var ce *CorruptError
	fmt.Printf("corrupt=%v err=%v\n", errors.As(err, &ce), err)
}

// TestUnreadableIsNotDamage: a good journal that a user who is not root cannot read is
// said to be unreadable, not damaged, and nobody is told to move it aside. The test
// binary opens it again as nobody (setpriv, from util-linux): root reads anything.
func TestUnreadableIsNotDamage(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to open the journal as another user: apt-get install util-linux")
	}
	dir := t.TempDir()
	// The directories on the way are searchable by nobody; the journal stays root's, 0600.
	for d := dir; d != filepath.Dir(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, FileName)
	if _, err := Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", exe)
	cmd.Env = append(os.Environ(), openAsEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	msg := string(out)
	if !strings.Contains(msg, "corrupt=false") || !strings.Contains(msg, "permission denied") || !strings.Contains(msg, "run this as root") ||
		strings.Contains(msg, "aside") || strings.Contains(msg, "damaged") {
		t.Fatalf("opened as nobody: %s", msg)
	}
}
