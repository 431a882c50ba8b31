package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// TestCreateOnFullFilesystem: a new journal on a full state filesystem (the agent's first
// update on a node whose disk is full) is reported as the host's problem, with what to
// do, and leaves nothing behind; once there is room, it is created.
func TestCreateOnFullFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a tmpfs at %s (the tests run as root): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	path := filepath.Join(dir, FileName)
	_, err = Open(path, Options{})
	var unwritable *UnwritableError
	if !errors.As(err, &unwritable) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Open on a full filesystem: %v, want an UnwritableError of ENOSPC", err)
	}
	for _, want := range []string{"journal " + path + " cannot be written", "free space on"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q lacks %q", err, want)
		}
	}
	if left, _ := filepath.Glob(path + "*"); len(left) != 0 {
		t.Errorf("a failed create left %v", left)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	j, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open once there is room: %v", err)
	}
	if _, err := j.List(); err != nil {
		t.Errorf("the journal created once there is room: %v", err)
	}
}
