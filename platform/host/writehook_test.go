package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteHookPoints: the hook sees both points of a write in order, and at each the
// disk is as its comment says: at write-temp the new data is in a temporary file beside
// the old file, at write-renamed the file holds the new data and no temporary is left.
func TestWriteHookPoints(t *testing.T) {
	r, dir := newRoot(t)
	if err := r.WriteFile("/etc/a.conf", []byte("old\n"), 0o644, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	var seen []string
	r.SetWriteHook(func(point, p string) {
		seen = append(seen, point+" "+p)
		got, err := os.ReadFile(filepath.Join(dir, "etc/a.conf"))
		if err != nil {
			t.Fatalf("at %s: %v", point, err)
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "etc"))
		var temps []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".a.conf.mcotui-") {
				temps = append(temps, e.Name())
			}
		}
		switch point {
		case WriteTempWritten:
			if string(got) != "old\n" || len(temps) != 1 {
				t.Errorf("at %s: file %q, temporaries %v; want the old file and one temporary", point, got, temps)
			} else if data, _ := os.ReadFile(filepath.Join(dir, "etc", temps[0])); string(data) != "new\n" {
				t.Errorf("at %s: the temporary holds %q", point, data)
			}
		case WriteRenamed:
			if string(got) != "new\n" || len(temps) != 0 {
				t.Errorf("at %s: file %q, temporaries %v; want the new file alone", point, got, temps)
			}
		}
	})
	if err := r.WriteFile("/etc/a.conf", []byte("new\n"), 0o644, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	want := []string{WriteTempWritten + " /etc/a.conf", WriteRenamed + " /etc/a.conf"}
	if !slices.Equal(seen, want) {
		t.Fatalf("hook saw %v, want %v", seen, want)
	}
	r.SetWriteHook(nil)
	if err := r.WriteFile("/etc/a.conf", []byte("newer\n"), 0o644, os.Getuid(), os.Getgid()); err != nil || len(seen) != 2 {
		t.Fatalf("after the hook was cleared: %v, hook calls %d", err, len(seen))
	}
}

// TestSystemBusAddressUnder: the host's bus under a root prefix unless the environment
// names one; with --root / the well-known socket.
func TestSystemBusAddressUnder(t *testing.T) {
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "")
	for root, want := range map[string]string{
		"/":       "unix:path=/var/run/dbus/system_bus_socket",
		"/rootfs": "unix:path=/rootfs/run/dbus/system_bus_socket",
		"/host/":  "unix:path=/host/run/dbus/system_bus_socket",
	} {
		if got := SystemBusAddressUnder(root); got != want {
			t.Errorf("SystemBusAddressUnder(%q) = %q, want %q", root, got, want)
		}
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/tmp/bus")
	if got := SystemBusAddressUnder("/rootfs"); got != "unix:path=/tmp/bus" {
		t.Errorf("with DBUS_SYSTEM_BUS_ADDRESS set: %q", got)
	}
}

// TestWriteRemovesAnInterruptedWritesTemporary: a write a power cut stopped after its
// temporary file was synced leaves that file beside the target; the next write of the
// same file (the resumed update's) takes its place, so no leftover accumulates. A
// leftover that is a symbolic link is removed as a link: its target is not written.
func TestWriteRemovesAnInterruptedWritesTemporary(t *testing.T) {
	r, dir := newRoot(t)
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(etc, tempName("a.conf"))
	if err := os.WriteFile(leftover, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(etc, tempName("b.conf"))); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.conf", "b.conf"} {
		if err := r.WriteFile("/etc/"+f, []byte("new "+f), 0o644, os.Getuid(), os.Getgid()); err != nil {
			t.Fatalf("write /etc/%s over a leftover temporary: %v", f, err)
		}
		if got, err := os.ReadFile(filepath.Join(etc, f)); err != nil || string(got) != "new "+f {
			t.Errorf("/etc/%s holds %q (%v)", f, got, err)
		}
	}
	entries, err := os.ReadDir(etc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"a.conf", "b.conf"}) {
		t.Errorf("/etc holds %v, want the two files alone", names)
	}
	if got, _ := os.ReadFile(outside); string(got) != "untouched" {
		t.Errorf("the leftover link's target holds %q", got)
	}
}
