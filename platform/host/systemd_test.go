package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/mcotui/mcotui/platform/host/hosttest"
)

// node is a host under a temporary root with a systemd double on a private bus, and the
// real go-systemd client connected to it.
type node struct {
	root    *Root
	bus     *hosttest.Bus
	double  *hosttest.Systemd
	systemd *Systemd
}

func newNode(t *testing.T, opts ...Option) *node {
	t.Helper()
	root, dir := newRoot(t)
	bus := hosttest.StartBus(t)
	double := hosttest.NewSystemd(t, bus, dir)
	sd, err := NewSystemd(t.Context(), append([]Option{WithBusAddress(bus.Address)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sd.Close)
	return &node{root: root, bus: bus, double: double, systemd: sd}
}

// unit writes a unit file through the agent's own Root, as the agent does.
func (n *node) unit(t *testing.T, path, content string) {
	t.Helper()
	must(t, n.root.WriteFile(path, []byte(content), 0o644, os.Getuid(), os.Getgid()))
}

const (
	fooService = "[Unit]\nDescription=foo\n[Service]\nExecStart=/usr/bin/foo\nExecReload=/bin/kill -HUP $MAINPID\n[Install]\nWantedBy=multi-user.target\n"
	barService = "[Service]\nExecStart=/usr/bin/bar\n[Install]\nRequiredBy=network-online.target\n"
)

func TestDaemonReloadIsCounted(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	ctx := t.Context()
	must(t, n.systemd.DaemonReload(ctx))
	must(t, n.systemd.DaemonReload(ctx))
	if got := n.double.DaemonReloads(); got != 2 {
		t.Fatalf("daemon-reloads = %d, want 2", got)
	}

	n.double.FailMethod("Reload", "", "org.freedesktop.DBus.Error.AccessDenied", "Access denied")
	err := n.systemd.DaemonReload(ctx)
	var be *BusError
	if !errors.As(err, &be) || be.Name != "org.freedesktop.DBus.Error.AccessDenied" || !strings.Contains(err.Error(), "daemon-reload") {
		t.Fatalf("failed daemon-reload: %v", err)
	}
	if got := n.double.DaemonReloads(); got != 2 {
		t.Fatalf("a refused daemon-reload was counted: %d", got)
	}
}

func TestRestartAndReloadCheckTheJobResult(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.unit(t, "/etc/systemd/system/foo.service", fooService)
	ctx := t.Context()
	// Reload first: after a failed restart the unit does not run, and a reload of it
	// ends "invalid", as on real systemd.
	ops := []struct {
		op, method string
		do         func(context.Context, string) error
	}{
		{"reload", "ReloadUnit", n.systemd.Reload},
		{"restart", "RestartUnit", n.systemd.Restart},
	}
	for _, c := range ops {
		op := c.op
		if err := c.do(ctx, "foo.service"); err != nil {
			t.Errorf("%s with result done: %v", op, err)
		}
		n.double.SetJobResult(c.method, "foo.service", "failed")
		err := c.do(ctx, "foo.service")
		var je *JobError
		if !errors.As(err, &je) || *je != (JobError{Op: op, Unit: "foo.service", Result: "failed"}) {
			t.Errorf("%s with result failed: %v, want a JobError", op, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, op+" unit foo.service") || !strings.Contains(msg, `"failed"`) {
			t.Errorf("%s error %q does not name the unit and the result", op, msg)
		}
	}
	if n.double.Restarts("foo.service") != 2 || n.double.Reloads("foo.service") != 2 {
		t.Errorf("restarts %d, reloads %d; want 2 each", n.double.Restarts("foo.service"), n.double.Reloads("foo.service"))
	}
}

func TestRestartSurfacesSystemdRefusals(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.unit(t, "/usr/lib/systemd/system/bar.service", barService)
	ctx := t.Context()

	err := n.systemd.Restart(ctx, "missing.service")
	var de dbus.Error
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &de) || de.Name != "org.freedesktop.systemd1.NoSuchUnit" {
		t.Errorf("restart of a unit with no file: %v", err)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "restart unit missing.service: ") {
		t.Errorf("error %q does not start with what failed", err)
	}

	err = n.systemd.Reload(ctx, "bar.service")
	var be *BusError
	if !errors.As(err, &be) || be.Name != "org.freedesktop.systemd1.JobTypeNotApplicable" {
		t.Errorf("reload of a service with no ExecReload=: %v", err)
	}

	n.double.FailMethod("RestartUnit", "bar.service", "org.freedesktop.DBus.Error.AccessDenied", "Interactive authentication required.")
	if err := n.systemd.Restart(ctx, "bar.service"); !errors.As(err, &be) || be.Name != "org.freedesktop.DBus.Error.AccessDenied" {
		t.Errorf("restart refused by D-Bus: %v", err)
	}
}

func TestRestartGivesUpOnCancelAndTimeout(t *testing.T) {
	t.Parallel()
	n := newNode(t, WithJobTimeout(200*time.Millisecond))
	n.unit(t, "/etc/systemd/system/foo.service", fooService)
	release := n.double.HoldJobs("RestartUnit", "foo.service")
	defer release()

	start := time.Now()
	err := n.systemd.Restart(t.Context(), "foo.service")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "restart unit foo.service") {
		t.Errorf("held job with a 200ms job timeout: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	if err := n.systemd.Restart(ctx, "foo.service"); !errors.Is(err, context.Canceled) {
		t.Errorf("held job with a canceled context: %v", err)
	}

	// Results that come after the caller gave up must not wedge the connection.
	release()
	if err := n.systemd.Reload(t.Context(), "foo.service"); err != nil {
		t.Errorf("a job after abandoned ones: %v", err)
	}
}

func TestEnableDisableMaskUnmask(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.unit(t, "/etc/systemd/system/foo.service", fooService)
	n.unit(t, "/usr/lib/systemd/system/bar.service", barService)
	ctx := t.Context()
	dir := n.root.Dir()
	wants := filepath.Join(dir, "etc/systemd/system/multi-user.target.wants/foo.service")
	requires := filepath.Join(dir, "etc/systemd/system/network-online.target.requires/bar.service")
	mask := filepath.Join(dir, "etc/systemd/system/foo.service")
	state := func(unit, want string) {
		t.Helper()
		got, err := n.systemd.UnitFileState(ctx, unit)
		if err != nil || got != want {
			t.Errorf("state of %s = %q, %v; want %q", unit, got, err, want)
		}
	}
	link := func(p, want string) {
		t.Helper()
		got, err := os.Readlink(p)
		if want == "" && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s -> %q, %v; want no link", p, got, err)
		} else if want != "" && got != want {
			t.Errorf("%s -> %q, %v; want -> %s", p, got, err, want)
		}
	}
	state("foo.service", "disabled")

	must(t, n.systemd.Enable(ctx, "foo.service", "bar.service"))
	link(wants, "/etc/systemd/system/foo.service") // a host path: systemd knows nothing of the root
	link(requires, "/usr/lib/systemd/system/bar.service")
	state("foo.service", "enabled")
	state("bar.service", "enabled")
	must(t, n.systemd.Enable(ctx, "foo.service")) // again: nothing changes

	must(t, n.systemd.Disable(ctx, "foo.service"))
	link(wants, "")
	state("foo.service", "disabled")
	state("bar.service", "enabled")

	must(t, n.root.Remove("/etc/systemd/system/foo.service"))
	must(t, n.systemd.Mask(ctx, "foo.service"))
	link(mask, "/dev/null")
	state("foo.service", "masked")
	must(t, n.systemd.Mask(ctx, "foo.service"))
	if err := n.systemd.Restart(ctx, "foo.service"); err == nil || !strings.Contains(err.Error(), "masked") {
		t.Errorf("restart of a masked unit: %v", err)
	}
	must(t, n.systemd.Unmask(ctx, "foo.service"))
	link(mask, "")
	must(t, n.systemd.Unmask(ctx, "foo.service"))

	want := []string{
		"GetUnitFileState foo.service",
		"EnableUnitFiles foo.service runtime=false force=true",
		"EnableUnitFiles bar.service runtime=false force=true",
		"GetUnitFileState foo.service",
		"GetUnitFileState bar.service",
		"EnableUnitFiles foo.service runtime=false force=true",
		"DisableUnitFiles foo.service runtime=false",
		"GetUnitFileState foo.service",
		"GetUnitFileState bar.service",
		"MaskUnitFiles foo.service runtime=false force=true",
		"GetUnitFileState foo.service",
		"MaskUnitFiles foo.service runtime=false force=true",
		"RestartUnit foo.service replace -> org.freedesktop.systemd1.UnitMasked",
		"UnmaskUnitFiles foo.service runtime=false",
		"UnmaskUnitFiles foo.service runtime=false",
	}
	var got []string
	for _, c := range n.double.Calls() {
		got = append(got, c.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnitFileErrorsNameTheUnit(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.unit(t, "/etc/systemd/system/foo.service", fooService)
	ctx := t.Context()

	if _, err := n.systemd.UnitFileState(ctx, "missing.service"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.service") {
		t.Errorf("state of a unit with no file: %v", err)
	}
	err := n.systemd.Enable(ctx, "foo.service", "missing.service")
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "enable unit missing.service: ") {
		t.Errorf("enable of a unit with no file: %v", err)
	}
	// Masking over a unit file in /etc/systemd/system is refused by systemd, even forced.
	if err := n.systemd.Mask(ctx, "foo.service"); err == nil || !strings.HasPrefix(err.Error(), "mask unit foo.service: ") {
		t.Errorf("mask over a unit file: %v", err)
	}
}

func TestUnitsArePassedByName(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	ctx := t.Context()
	for _, bad := range []string{
		"/etc/systemd/system/foo.service", // the agent's view of a path is not systemd's
		filepath.Join(n.root.Dir(), "etc/systemd/system/foo.service"),
		"foo", "foo.conf", ".service", "@x.service", "a@b@c.service", "foo bar.service", strings.Repeat("a", 250) + ".service",
	} {
		errs := []error{
			n.systemd.Enable(ctx, "ok.service", bad),
			n.systemd.Disable(ctx, bad),
			n.systemd.Mask(ctx, bad),
			n.systemd.Unmask(ctx, bad),
			n.systemd.Restart(ctx, bad),
			n.systemd.Reload(ctx, bad),
		}
		_, err := n.systemd.UnitFileState(ctx, bad)
		for _, err := range append(errs, err) {
			if err == nil || !strings.Contains(err.Error(), "not a unit name") && !strings.Contains(err.Error(), "a path, not a unit name") {
				t.Errorf("%q accepted or misreported: %v", bad, err)
			}
		}
	}
	if calls := n.double.Calls(); len(calls) != 0 {
		t.Errorf("bad names reached systemd: %v", calls)
	}
	for _, good := range []string{"foo.service", "getty@tty1.service", "sys-fs-fuse-connections.mount", `dev-disk-by\x2duuid.device`, "a:b_c-d.timer"} {
		if err := checkUnitName(good); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

func TestNewSystemd(t *testing.T) {
	bus := hosttest.StartBus(t)
	_, err := NewSystemd(t.Context(), WithBusAddress(bus.Address))
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), bus.Address) {
		t.Errorf("no systemd on the bus: %v", err)
	}
	_, err = NewSystemd(t.Context(), WithBusAddress("unix:path="+filepath.Join(t.TempDir(), "none")))
	if err == nil || !strings.Contains(err.Error(), "connect to systemd on the bus at unix:path=") {
		t.Errorf("no bus: %v", err)
	}

	// Without an address, DBUS_SYSTEM_BUS_ADDRESS names the bus, as for a separate agent process.
	hosttest.NewSystemd(t, bus, t.TempDir())
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.Address)
	sd, err := NewSystemd(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	must(t, sd.DaemonReload(t.Context()))

	// The connection lives as long as the context it was made with.
	ctx, cancel := context.WithCancel(t.Context())
	sd2, err := NewSystemd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sd2.Close()
	cancel()
	if err := sd2.DaemonReload(t.Context()); err == nil {
		t.Error("a connection whose context ended still works")
	}
}

// TestAnotherProcessUsesTheDoubles runs this test binary again as a stand-in for a
// separate `mcotui agent` process: it finds the bus only through DBUS_SYSTEM_BUS_ADDRESS,
// and drives the doubles through the real clients.
func TestAnotherProcessUsesTheDoubles(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.unit(t, "/etc/systemd/system/foo.service", fooService)
	logind := hosttest.NewLogind(t, n.bus)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), n.bus.Env(), "HOST_TEST_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	if n.double.DaemonReloads() != 1 || n.double.Restarts("foo.service") != 1 || logind.Reboots() != 1 {
		t.Fatalf("daemon-reloads %d, restarts %d, reboots %d; want 1 each",
			n.double.DaemonReloads(), n.double.Restarts("foo.service"), logind.Reboots())
	}
	if state, err := n.systemd.UnitFileState(t.Context(), "foo.service"); err != nil || state != "enabled" {
		t.Fatalf("after the child enabled foo.service: %q, %v", state, err)
	}
}

// TestChildProcess is the child of TestAnotherProcessUsesTheDoubles; on its own it does
// nothing.
func TestChildProcess(t *testing.T) {
	if os.Getenv("HOST_TEST_CHILD") != "1" {
		return
	}
	ctx := t.Context()
	sd, err := NewSystemd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	must(t, sd.DaemonReload(ctx))
	must(t, sd.Enable(ctx, "foo.service"))
	must(t, sd.Restart(ctx, "foo.service"))
	l, err := NewLogind(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	must(t, l.Reboot(ctx))
}
