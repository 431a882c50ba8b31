package host

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpecialFilesRefused: a FIFO, a device and a socket are refused by every operation
// before it reads or replaces them; reading a FIFO waited forever for a writer, reading
// /dev/zero never ended.
func TestSpecialFilesRefused(t *testing.T) {
	r, dir := newRoot(t)
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(dir, "etc/zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Fatalf("mknod (the tests run as root): %v", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "etc/sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kinds := map[string]string{"/etc/fifo": "FIFO", "/etc/zero": "character device", "/etc/sock": "socket"}
	for p, kind := range kinds {
		ops := map[string]func() error{
			"CheckPath": func() error { return r.CheckPath(p) },
			"Stat":      func() error { _, err := r.Stat(p); return err },
			"ReadFile":  func() error { _, err := r.ReadFile(p); return err },
			"Open":      func() error { f, _, err := r.Open(p); f.Close(); return err },
			"WriteFile": func() error { return r.WriteFile(p, []byte("x"), 0o644, 0, 0) },
		}
		for name, op := range ops {
			// A hang here is the bug (go test's -timeout then fails the run with the stack).
			err := op()
			var se *SpecialFileError
			if !errors.As(err, &se) || se.Kind != kind || !strings.Contains(err.Error(), p+" is a "+kind) {
				t.Errorf("%s(%s) = %v, want a SpecialFileError for a %s", name, p, err, kind)
			}
		}
	}
	// Still what it was: nothing replaced the FIFO.
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "etc/fifo"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Fatalf("the FIFO is gone or changed: %v, mode %o", err, st.Mode)
	}
}

// TestReadFileMaxBounded: a read stops at its limit, for a file bigger than it.
func TestReadFileMaxBounded(t *testing.T) {
	r, dir := newRoot(t)
	writeFile(t, filepath.Join(dir, "etc/big"), strings.Repeat("x", 1001))
	if _, err := r.ReadFileMax("/etc/big", 1000); !errors.As(err, new(*TooLargeError)) {
		t.Fatalf("ReadFileMax over the limit = %v, want a TooLargeError", err)
	}
	if got, err := r.ReadFileMax("/etc/big", 1001); err != nil || len(got) != 1001 {
		t.Fatalf("ReadFileMax at the limit = %d bytes, %v", len(got), err)
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
