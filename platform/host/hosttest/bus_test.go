package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// TestDoublesServeAnotherProcess drives the doubles from busctl, a separate process that
// finds the bus the way an agent does, through DBUS_SYSTEM_BUS_ADDRESS.
func TestDoublesServeAnotherProcess(t *testing.T) {
	t.Parallel()
	busctl, err := exec.LookPath("busctl")
	if err != nil {
		t.Fatalf("busctl is not on PATH (%v): it plays the separate client process; apt-get install systemd", err)
	}
	bus := StartBus(t)
	root := t.TempDir()
	unit := filepath.Join(root, "etc/systemd/system/foo.service")
	must(t, os.MkdirAll(filepath.Dir(unit), 0o755))
	must(t, os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
	sd := NewSystemd(t, bus, root)
	logind := NewLogind(t, bus)

	call := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(busctl, append([]string{"--system", "call"}, args...)...)
		cmd.Env = append(os.Environ(), bus.Env())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("busctl call %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	const sdDest, sdPath, sdIface = "org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"
	call(sdDest, sdPath, sdIface, "EnableUnitFiles", "asbb", "1", "foo.service", "false", "false")
	if got := call(sdDest, sdPath, sdIface, "GetUnitFileState", "s", "foo.service"); got != `s "enabled"` {
		t.Errorf("GetUnitFileState = %s, want enabled", got)
	}
	call(sdDest, sdPath, sdIface, "Reload")
	if got := call(sdDest, sdPath, sdIface, "RestartUnit", "ss", "foo.service", "replace"); got != `o "/org/freedesktop/systemd1/job/1"` {
		t.Errorf("RestartUnit = %s", got)
	}
	call("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "Reboot", "b", "false")

	want := []string{
		"EnableUnitFiles foo.service runtime=false force=false",
		"GetUnitFileState foo.service",
		"Reload",
		"RestartUnit foo.service replace",
	}
	if got := callStrings(sd.Calls()); !slices.Equal(got, want) {
		t.Errorf("systemd calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sd.DaemonReloads() != 1 || sd.Restarts("foo.service") != 1 || logind.Reboots() != 1 {
		t.Errorf("counts: daemon-reloads %d, restarts %d, reboots %d; want 1 each", sd.DaemonReloads(), sd.Restarts("foo.service"), logind.Reboots())
	}

	// Introspection lets generic tools see the interfaces.
	cmd := exec.Command(busctl, "--system", "introspect", "--xml-interface", sdDest, sdPath)
	cmd.Env = append(os.Environ(), bus.Env())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `<signal name="JobRemoved">`) || !strings.Contains(string(out), `<method name="RestartUnit">`) {
		t.Errorf("introspection: %v\n%s", err, out)
	}
}

func TestStartBusWithoutDaemonSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		StartBus(ft)
	}()
	<-done
	if !strings.Contains(ft.msg, "apt-get install dbus-daemon") {
		t.Fatalf("StartBus without dbus-daemon said %q", ft.msg)
	}
}

// fatalRecorder records a fatal message and ends the goroutine, as t.Fatalf does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestHeldJobEndsOnRelease(t *testing.T) {
	t.Parallel()
	bus := StartBus(t)
	root := t.TempDir()
	unit := filepath.Join(root, "usr/lib/systemd/system/foo.service")
	must(t, os.MkdirAll(filepath.Dir(unit), 0o755))
	must(t, os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/true\n"), 0o644))
	sd := NewSystemd(t, bus, root)

	client := bus.Conn(t)
	must(t, client.AddMatchSignal(dbus.WithMatchInterface(managerIface), dbus.WithMatchMember("JobRemoved")))
	signals := make(chan *dbus.Signal, 4)
	client.Signal(signals)

	release := sd.HoldJobs("RestartUnit", "foo.service")
	sd.SetJobResult("RestartUnit", "foo.service", "failed")
	var job dbus.ObjectPath
	must(t, client.Object(systemdName, systemdPath).Call(managerIface+".RestartUnit", 0, "foo.service", "replace").Store(&job))
	select {
	case s := <-signals:
		t.Fatalf("JobRemoved %v while the job is held", s.Body)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case s := <-signals:
		if s.Body[1] != job || s.Body[2] != "foo.service" || s.Body[3] != "failed" {
			t.Errorf("JobRemoved %v, want job %s for foo.service with result failed", s.Body, job)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no JobRemoved after release")
	}
}

func callStrings(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}
