package manifestfile_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/platform/manifestfile"
)

func mc(name string) string {
	return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: " + name + "\n"
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(docs []manifest.Document) []string {
	var out []string
	for _, mc := range manifest.MachineConfigs(docs) {
		out = append(out, mc.Name)
	}
	return out
}

// TestLoadDirectory: a directory gives its manifests recursively in lexical order of
// their paths, whatever the case of the extension, and leaves other files out; a file
// named directly is read whatever its name.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.yaml"), mc("b"))
	write(t, filepath.Join(dir, "a", "z.YML"), mc("az"))
	write(t, filepath.Join(dir, "c.json"), `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"c"}}`)
	write(t, filepath.Join(dir, "README.md"), "not: [a manifest")
	write(t, filepath.Join(dir, "two.yaml"), mc("two-1")+"---\n"+mc("two-2"))
	other := filepath.Join(t.TempDir(), "extra.txt")
	write(t, other, mc("extra"))

	docs, err := manifestfile.Load(dir, other)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"az", "b", "c", "two-1", "two-2", "extra"}
	if got := names(docs); !slices.Equal(got, want) {
		t.Errorf("MachineConfigs = %v, want %v", got, want)
	}
	if f := docs[0].File; f != filepath.Join(dir, "a", "z.YML") {
		t.Errorf("first document's file = %q, want the path it was read from", f)
	}
}

// TestLoadErrors: a missing path and a bad document are errors that name the path.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := manifestfile.Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(%s) = %v, want an error naming it", missing, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	write(t, bad, "kind: [MachineConfig\n")
	if _, err := manifestfile.Load(dir); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load(%s) = %v, want an error naming %s", dir, err, bad)
	}
}
