package durable_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcotui/mcotui/internal/durable"
)

// TestWriteAndRemove: WriteFile makes the missing directories, replaces the file whole
// with the mode asked, and leaves no temporary file beside it; Remove of a file that is
// gone already is no error.
func TestWriteAndRemove(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a", "b", "state.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := durable.WriteFile(name, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != data {
			t.Fatalf("read %s: %q, %v; want %q", name, got, err, data)
		}
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("stat %s: %v, %v; want mode 0640", name, fi.Mode(), err)
	}
	entries, err := os.ReadDir(filepath.Dir(name))
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v); want the file alone", entries, err)
	}
	for range 2 {
		if err := durable.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("stat after Remove: %v", err)
	}
	if err := durable.SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("SyncDir of a missing directory: no error")
	}
}
