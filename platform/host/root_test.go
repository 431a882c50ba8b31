package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newRoot(t *testing.T) (*Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

func TestWriteFileCreatesParentsModeAndOwner(t *testing.T) {
	r, dir := newRoot(t)
	mode := fs.FileMode(0o640) | fs.ModeSetgid
	if err := r.WriteFile("/etc/mcotui/a/b.conf", []byte("hello\n"), mode, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "etc/mcotui/a/b.conf"))
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("content = %q, %v", got, err)
	}
	info, err := r.Stat("/etc/mcotui/a/b.conf")
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode != mode {
		t.Fatalf("mode = %v, want %v", info.Mode, mode)
	}
	if st, _ := os.Stat(filepath.Join(dir, "etc/mcotui")); st.Mode().Perm() != 0o755 {
		t.Fatalf("created directory mode = %v, want 0755", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "etc/mcotui/a"))
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}

	// Replacing keeps atomicity: the new content, the new mode.
	if err := r.WriteFile("/etc/mcotui/a/b.conf", []byte("bye\n"), 0o600, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ReadFile("/etc/mcotui/a/b.conf"); string(got) != "bye\n" {
		t.Fatalf("after replace: %q", got)
	}
	if info, _ := r.Stat("/etc/mcotui/a/b.conf"); info.Mode != 0o600 {
		t.Fatalf("after replace mode = %v", info.Mode)
	}
}

func TestRefusedPathsWriteNothing(t *testing.T) {
	r, dir := newRoot(t)
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(dir, "etc/linked")))                          // directory link leaving the root
	must(t, os.Symlink("/etc/real.conf", filepath.Join(dir, "etc/file-link.conf")))         // absolute link to a file
	must(t, os.WriteFile(filepath.Join(dir, "etc/plain"), nil, 0o644))                      // a file where a directory is expected
	must(t, os.Symlink("plain", filepath.Join(dir, "etc/rel-link")))                        // relative link inside the root
	must(t, os.MkdirAll(filepath.Join(dir, "var/lib"), 0o755))                              //
	must(t, os.Symlink(filepath.Join(dir, "etc"), filepath.Join(dir, "var/lib/etc-alias"))) // link to a directory inside the root

	cases := []struct {
		path, want string
		symlink    bool
	}{
		{path: "relative/path", want: "not an absolute path"},
		{path: "/etc/../../escape", want: "not a clean path"},
		{path: "/etc//double", want: "not a clean path"},
		{path: "/", want: "not a file"},
		{path: "/etc/linked/passwd", symlink: true, want: "/etc/linked is a symbolic link"},
		{path: "/etc/file-link.conf", symlink: true, want: "/etc/file-link.conf is a symbolic link"},
		{path: "/etc/rel-link", symlink: true},
		{path: "/etc/rel-link/x", symlink: true},
		{path: "/var/lib/etc-alias/new.conf", symlink: true},
		{path: "/etc/plain/x", want: "/etc/plain is not a directory"},
		{path: "/etc", want: "is a directory"},
	}
	before := snapshot(t, dir, outside)
	for _, c := range cases {
		for op, do := range map[string]func() error{
			"check":  func() error { return r.CheckPath(c.path) },
			"write":  func() error { return r.WriteFile(c.path, []byte("x"), 0o644, 0, 0) },
			"remove": func() error { return r.Remove(c.path) },
		} {
			err := do()
			if err == nil {
				t.Errorf("%s %s: accepted", op, c.path)
				continue
			}
			var se *SymlinkError
			if c.symlink != errors.As(err, &se) {
				t.Errorf("%s %s: err = %v, symlink error %v", op, c.path, err, c.symlink)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: err = %q, want it to say %q", op, c.path, err, c.want)
			}
		}
	}
	if _, err := r.ReadFile("/etc/file-link.conf"); err == nil {
		t.Error("ReadFile followed a symlink")
	}
	if _, err := r.Stat("/etc/file-link.conf"); err == nil {
		t.Error("Stat followed a symlink")
	}
	if after := snapshot(t, dir, outside); after != before {
		t.Fatalf("a refused operation changed the filesystem:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestRemoveIsIdempotent(t *testing.T) {
	r, dir := newRoot(t)
	must(t, r.WriteFile("/etc/x", []byte("x"), 0o644, os.Getuid(), os.Getgid()))
	must(t, r.Remove("/etc/x"))
	must(t, r.Remove("/etc/x"))
	must(t, r.Remove("/missing/dir/x"))
	if _, err := os.Stat(filepath.Join(dir, "etc/x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("file still there")
	}
	if _, err := r.Stat("/etc/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a removed file: %v", err)
	}
}

// snapshot lists every path, link target, mode and content under dirs.
func snapshot(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, _ := e.Info()
			b.WriteString(p + " " + info.Mode().String())
			if e.Type()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				b.WriteString(" -> " + target)
			} else if e.Type().IsRegular() {
				data, _ := os.ReadFile(p)
				b.WriteString(" " + string(data))
			}
			b.WriteString("\n")
			return nil
		})
	}
	return b.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
