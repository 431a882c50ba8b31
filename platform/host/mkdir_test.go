package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMkdirAllSetsModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if err := r.MkdirAll("/home/core/.ssh", 0o700, uid, gid); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "home/core/.ssh"))
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("~/.ssh = %v, %v", st, err)
	}
	// An existing directory converges on the mode asked for.
	if err := os.Chmod(filepath.Join(dir, "home/core/.ssh"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := r.MkdirAll("/home/core/.ssh", 0o700, uid, gid); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "home/core/.ssh")); st.Mode().Perm() != 0o700 {
		t.Fatalf("mode after second MkdirAll: %v", st.Mode())
	}
}

func TestMkdirAllRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	r, _ := NewRoot(dir)
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "home/core")); err != nil {
		t.Fatal(err)
	}
	var se *SymlinkError
	if err := r.MkdirAll("/home/core", 0o700, 0, 0); !errors.As(err, &se) {
		t.Fatalf("MkdirAll over a link: %v", err)
	}
	if err := r.MkdirAll("/home/core/.ssh", 0o700, 0, 0); !errors.As(err, &se) {
		t.Fatalf("MkdirAll through a link: %v", err)
	}
}

func TestRemoveEmptyDir(t *testing.T) {
	dir := t.TempDir()
	r, _ := NewRoot(dir)
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveEmptyDir("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a/b")); err != nil {
		t.Fatalf("a non-empty directory was removed: %v", err)
	}
	for _, p := range []string{"/a/b", "/a", "/a"} {
		if err := r.RemoveEmptyDir(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty directory left: %v", err)
	}
}
