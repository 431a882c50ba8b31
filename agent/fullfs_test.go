package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// smallFS mounts a tmpfs of size bytes at a new directory, for the length of the test:
// a real filesystem that fills up (the tests run as root).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a %s tmpfs at %s (the tests run as root): %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes to a file in dir until the filesystem is full, and returns the file.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return p
		}
	}
}

// TestFullStateFilesystemReported: with the state filesystem full, the agent cannot
// journal the update, and says so: NodeDegraded True naming the journal and the cause,
// the node Degraded, never Done on the new config. Once space is freed it carries the
// update through.
func TestFullStateFilesystemReported(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	s.h.stateDir = filepath.Join(smallFS(t, "512k"), "state")
	j, err := store.Open(filepath.Join(s.h.stateDir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.h.journal = j
	filler := fill(t, filepath.Dir(s.h.stateDir))
	s.c.setDesired(cfgB)

	var reason string
	reported := func() bool {
		n, err := s.c.Node(t.Context())
		if err != nil || n.Annotations[nodeanno.StateKey] != nodeanno.StateDegraded {
			return false
		}
		reason = n.Annotations[nodeanno.ReasonKey]
		return s.c.condition(phase.NodeDegraded).Status == metav1.ConditionTrue
	}
	if ended := s.run("", reported); ended != "until" {
		t.Fatalf("ended %s, want the full filesystem reported", ended)
	}
	if !strings.Contains(reason, "no space left on device") || !strings.Contains(reason, s.h.stateDir) {
		t.Fatalf("reason %q, want it to name the state directory and the cause", reason)
	}
	if cur := s.c.annotation(nodeanno.CurrentConfigKey); cur != cfgA {
		t.Fatalf("currentConfig %s while the journal could not record the update", cur)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s after space was freed, want the update done; journal %s", ended, s.journalText())
	}
	s.requireFiles(configB(t))
}
