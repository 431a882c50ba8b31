package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestBootID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(content string) string {
		p := filepath.Join(dir, strings.NewReplacer(" ", "_", "\n", "_").Replace(content)+".id")
		must(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	if id, err := BootID(file("3f2a0c1e-6f4b-4a57-9d7e-0b8e2f1c9a01\n")); err != nil || id != "3f2a0c1e-6f4b-4a57-9d7e-0b8e2f1c9a01" {
		t.Errorf("BootID = %q, %v", id, err)
	}
	for _, bad := range []string{"", "\n", "two words\n"} {
		if id, err := BootID(file(bad)); err == nil {
			t.Errorf("BootID of %q = %q, want an error", bad, id)
		}
	}
	if _, err := BootID(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestBootIDOfThisMachine(t *testing.T) {
	t.Parallel()
	id, err := BootID(BootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("boot id %q is not a UUID", id)
	}
}
