package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"

	"github.com/mcotui/mcotui/platform/host"
)

// TestDriftWatchesThroughOstreeLinks: on an ostree host core's keys are under /home,
// a link to var/home; the monitor must watch the directory the link leads to inside the
// root and name the host's path when the file there changes.
func TestDriftWatchesThroughOstreeLinks(t *testing.T) {
	dir := t.TempDir()
	keysDir := filepath.Join(dir, "var/home/core/.ssh/authorized_keys.d")
	if err := os.MkdirAll(keysDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Absolute, as a link is read inside the root: followed from the agent's own root
	// it would lead nowhere (or somewhere else).
	if err := os.Symlink("/var/home", filepath.Join(dir, "home")); err != nil {
		t.Fatal(err)
	}
	root, err := host.NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]hostFile{
		sshKeysPath:               {Path: sshKeysPath},
		"/home/core/new/dir/f":    {Path: "/home/core/new/dir/f"},
		"/etc/missing/entirely/x": {Path: "/etc/missing/entirely/x"},
	}
	watched := watchDirs(root, files)
	want := map[string]string{
		keysDir:                             "/home/core/.ssh/authorized_keys.d",
		filepath.Join(dir, "var/home/core"): "/home/core",
		dir:                                 "/",
	}
	if len(watched) != len(want) {
		t.Fatalf("watched %v, want %v", watched, want)
	}
	for at, p := range want {
		if watched[at] != p {
			t.Errorf("watched[%s] = %q, want %q (all: %v)", at, watched[at], p, watched)
		}
	}

	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for at := range watched {
		if err := w.Add(at); err != nil {
			t.Fatal(err)
		}
	}
	m := &driftMonitor{files: files, watched: watched}
	a := &Agent{}
	if err := os.WriteFile(filepath.Join(dir, "var/home/core/other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keysDir, "ignition"), []byte("ssh-ed25519 AAAA hand-edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Events arrive in order: the unmanaged file's first, then the key file's. inotify
	// queues them before each write returns, so no wait is needed beyond the reads.
	for {
		var ev fsnotify.Event
		select {
		case ev = <-w.Events:
		case err := <-w.Errors:
			t.Fatal(err)
		}
		if a.managedEvent(m, ev.Name) {
			if ev.Name != filepath.Join(keysDir, "ignition") {
				t.Fatalf("%s taken for a managed file", ev.Name)
			}
			break
		}
		if ev.Name != filepath.Join(dir, "var/home/core/other") {
			t.Fatalf("event %s (%s) is neither file's", ev.Name, ev.Op)
		}
	}
	if !a.managedEvent(m, filepath.Join(dir, "var/home/core/new")) {
		t.Error("a directory made on the way to a managed file is not its event")
	}
}
