// Package behaviour is one suite of the systemd behaviours the agent relies on, run
// against the doubles of package hosttest in an ordinary test and against real systemd
// inside the VM test bed (e2e/vm), so that the doubles are held to what systemd does.
//
// Each check goes through the agent's own adapter (platform/host.Systemd, over the real
// go-systemd client) and looks at what the agent can see: the links on disk under the
// target's root, the unit-file state the manager reports, job results and the D-Bus
// error names of refusals.
//
// The test binary of this package takes its target from flags (see Flags), so it can be
// built with `go test -c` and run where systemd is:
//
//	behaviour.test -test.v -behaviour.bus unix:path=/run/dbus/system_bus_socket -behaviour.root /
//
// Without -behaviour.bus it runs against the doubles on a private bus.
package behaviour

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/mcotui/mcotui/platform/host"
)

// Target is a systemd the suite runs against.
type Target struct {
	// Name says which in the log: "doubles", "systemd".
	Name string
	// Bus is the D-Bus address systemd's Manager is on.
	Bus string
	// Root is the host's "/" as the suite sees it: unit files are written under
	// Root/etc/systemd/system.
	Root string
	// FailJobs makes start and restart jobs of unit fail where the target does not run
	// units (the doubles). Real systemd runs the unit, whose ExecStart fails; nil there.
	FailJobs func(unit string)
	// Runs says the target really runs units, so that what only a running unit shows
	// (a Type=simple service whose process fails) is checked.
	Runs bool
}

// Run runs every check against tg. Units are named mcotui-behaviour-<random>-*, and
// everything the suite made is taken away again when t ends.
func Run(t *testing.T, tg Target) {
	s := newSuite(t, tg)
	t.Run("EnableLinksWantsAndReportsEnabled", s.enable)
	t.Run("EnableWithoutInstallIsStatic", s.static)
	t.Run("MaskLinksDevNullAndRefusesStart", s.mask)
	t.Run("DisableOfMaskedStaysMasked", s.disableMasked)
	t.Run("RestartOfFailingUnitReportsFailed", s.restartFailing)
	t.Run("RestartAndReloadOfRunningUnit", s.restartReload)
	t.Run("ReloadWithoutExecReloadIsRefused", s.reloadNotApplicable)
	t.Run("DaemonReloadPicksUpNewUnit", s.daemonReload)
	t.Run("MissingUnitIsRefused", s.missing)
}

type suite struct {
	tg     Target
	sd     *host.Systemd
	conn   *dbus.Conn // for what the agent does not do: stopping units to clean up
	prefix string
}

func newSuite(t *testing.T, tg Target) *suite {
	ctx := t.Context()
	sd, err := host.NewSystemd(ctx, host.WithBusAddress(tg.Bus))
	if err != nil {
		t.Fatalf("behaviour on %s: %v", tg.Name, err)
	}
	t.Cleanup(sd.Close)
	conn, err := dbus.Connect(tg.Bus, dbus.WithAuth(dbus.AuthExternal(fmt.Sprint(os.Geteuid()))))
	if err != nil {
		t.Fatalf("behaviour on %s: connect to %s: %v", tg.Name, tg.Bus, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &suite{tg: tg, sd: sd, conn: conn, prefix: "mcotui-behaviour-" + strings.ToLower(rand.Text()[:6])}
}

// unit writes a new unit file named after the check and returns its name. It is
// stopped, disabled, unmasked and removed when the check ends.
func (s *suite) unit(t *testing.T, kind, content string) string {
	t.Helper()
	name := s.prefix + "-" + kind + ".service"
	p := s.path("/etc/systemd/system/" + name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		m := s.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
		_ = m.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StopUnit", 0, name, "replace").Err
		_ = s.sd.Unmask(ctx, name)
		_ = s.sd.Disable(ctx, name)
		_ = os.Remove(p)
		_ = m.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.ResetFailedUnit", 0, name).Err
		_ = s.sd.DaemonReload(ctx)
	})
	return name
}

// path is host path p under the target's root.
func (s *suite) path(p string) string { return filepath.Join(s.tg.Root, filepath.FromSlash(p)) }

// link is where the link at host path p points, or "" if p is no link.
func (s *suite) link(p string) string {
	target, err := os.Readlink(s.path(p))
	if err != nil {
		return ""
	}
	return target
}

func (s *suite) state(t *testing.T, unit, want string) {
	t.Helper()
	got, err := s.sd.UnitFileState(t.Context(), unit)
	if err != nil || got != want {
		t.Errorf("%s: UnitFileState(%s) = %q, %v; want %q", s.tg.Name, unit, got, err, want)
	}
}

// busError checks that err is systemd's D-Bus error name, and logs its message.
func (s *suite) busError(t *testing.T, what string, err error, name string) {
	t.Helper()
	var be *host.BusError
	switch {
	case !errors.As(err, &be):
		t.Errorf("%s: %s: %v, want the D-Bus error %s", s.tg.Name, what, err, name)
	case be.Name != name:
		t.Errorf("%s: %s: D-Bus error %s (%q), want %s", s.tg.Name, what, be.Name, be.Message, name)
	default:
		t.Logf("%s: %s: %s %q", s.tg.Name, what, be.Name, be.Message)
	}
}

func (s *suite) jobResult(t *testing.T, what string, err error, result string) {
	t.Helper()
	var je *host.JobError
	switch {
	case result == "done" && err != nil:
		t.Errorf("%s: %s: %v, want job result done", s.tg.Name, what, err)
	case result == "done":
	case !errors.As(err, &je):
		t.Errorf("%s: %s: %v, want job result %q", s.tg.Name, what, err, result)
	case je.Result != result:
		t.Errorf("%s: %s: job result %q, want %q", s.tg.Name, what, je.Result, result)
	default:
		t.Logf("%s: %s: %v", s.tg.Name, what, err)
	}
}

const (
	sleeper   = "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	noInstall = "[Service]\nType=oneshot\nExecStart=/bin/true\n"
)

func (s *suite) enable(t *testing.T) {
	ctx := t.Context()
	u := s.unit(t, "enable", sleeper)
	s.state(t, u, "disabled")
	if err := s.sd.Enable(ctx, u); err != nil {
		t.Fatalf("%s: enable: %v", s.tg.Name, err)
	}
	wants := "/etc/systemd/system/multi-user.target.wants/" + u
	if got, want := s.link(wants), "/etc/systemd/system/"+u; got != want {
		t.Errorf("%s: after enable %s -> %q, want %q", s.tg.Name, wants, got, want)
	}
	s.state(t, u, "enabled")
	// Enabling again changes nothing and is no error.
	if err := s.sd.Enable(ctx, u); err != nil {
		t.Errorf("%s: enable again: %v", s.tg.Name, err)
	}
	if err := s.sd.Disable(ctx, u); err != nil {
		t.Fatalf("%s: disable: %v", s.tg.Name, err)
	}
	if _, err := os.Lstat(s.path(wants)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: after disable %s: %v", s.tg.Name, wants, err)
	}
	s.state(t, u, "disabled")
}

func (s *suite) static(t *testing.T) {
	u := s.unit(t, "static", noInstall)
	if err := s.sd.Enable(t.Context(), u); err != nil {
		t.Errorf("%s: enable a unit without [Install]: %v", s.tg.Name, err)
	}
	s.state(t, u, "static")
}

func (s *suite) mask(t *testing.T) {
	ctx := t.Context()
	// A unit file in /etc/systemd/system is in the way of its own mask: the agent masks
	// units whose file is elsewhere (or none), so this one lives in /run.
	name := s.prefix + "-mask.service"
	p := s.path("/run/systemd/system/" + name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(sleeper), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = s.sd.Unmask(ctx, name)
		_ = os.Remove(p)
		_ = s.sd.DaemonReload(ctx)
	})
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.sd.Mask(ctx, name); err != nil {
		t.Fatalf("%s: mask: %v", s.tg.Name, err)
	}
	if got := s.link("/etc/systemd/system/" + name); got != "/dev/null" {
		t.Errorf("%s: after mask /etc/systemd/system/%s -> %q, want /dev/null", s.tg.Name, name, got)
	}
	s.state(t, name, "masked")
	// systemd acts on the mask after a daemon-reload, as the agent does it.
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	s.busError(t, "restart a masked unit", s.sd.Restart(ctx, name), "org.freedesktop.systemd1.UnitMasked")
	s.busError(t, "enable a masked unit", s.sd.Enable(ctx, name), "org.freedesktop.systemd1.UnitMasked")
	if err := s.sd.Unmask(ctx, name); err != nil {
		t.Fatalf("%s: unmask: %v", s.tg.Name, err)
	}
	if _, err := os.Lstat(s.path("/etc/systemd/system/" + name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: after unmask: %v", s.tg.Name, err)
	}
	s.state(t, name, "disabled")

	// A unit file of the same name in /etc/systemd/system: mask is refused, even forced.
	u := s.unit(t, "mask-in-etc", sleeper)
	s.busError(t, "mask a unit whose file is in /etc/systemd/system", s.sd.Mask(ctx, u), "org.freedesktop.systemd1.UnitExists")
}

func (s *suite) disableMasked(t *testing.T) {
	ctx := t.Context()
	name := s.prefix + "-nofile.service"
	t.Cleanup(func() { _ = s.sd.Unmask(context.WithoutCancel(ctx), name) })
	// Masking needs no unit file: the agent masks units the host may not have.
	if err := s.sd.Mask(ctx, name); err != nil {
		t.Fatalf("%s: mask a unit without a file: %v", s.tg.Name, err)
	}
	s.state(t, name, "masked")
	if err := s.sd.Disable(ctx, name); err != nil {
		t.Errorf("%s: disable a masked unit: %v", s.tg.Name, err)
	}
	s.state(t, name, "masked")
}

func (s *suite) restartFailing(t *testing.T) {
	ctx := t.Context()
	// oneshot: the job waits for the process, so its failure is the job's.
	u := s.unit(t, "failing", "[Service]\nType=oneshot\nExecStart=/bin/false\n")
	if s.tg.FailJobs != nil {
		s.tg.FailJobs(u)
	}
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	s.jobResult(t, "restart a oneshot unit whose ExecStart fails", s.sd.Restart(ctx, u), "failed")
	if s.tg.Runs {
		// Type=exec waits for the exec only: a missing binary fails the job.
		e := s.unit(t, "noexec", "[Service]\nType=exec\nExecStart=/nonexistent/mcotui-behaviour\n")
		if err := s.sd.DaemonReload(ctx); err != nil {
			t.Fatal(err)
		}
		s.jobResult(t, "restart a Type=exec unit whose binary is missing", s.sd.Restart(ctx, e), "failed")
		// Type=simple does not wait at all: the job is done although the process fails.
		// The agent cannot tell such a unit failed from the job result.
		simple := s.unit(t, "simple-failing", "[Service]\nExecStart=/bin/false\n")
		if err := s.sd.DaemonReload(ctx); err != nil {
			t.Fatal(err)
		}
		s.jobResult(t, "restart a Type=simple unit whose process fails", s.sd.Restart(ctx, simple), "done")
	}
}

func (s *suite) restartReload(t *testing.T) {
	ctx := t.Context()
	u := s.unit(t, "running", sleeper)
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if s.tg.Runs {
		// The doubles do not know which units run: only real systemd is asked this.
		s.jobResult(t, "reload a never started unit with ExecReload", s.sd.Reload(ctx, u), "invalid")
	}
	s.jobResult(t, "restart", s.sd.Restart(ctx, u), "done")
	s.jobResult(t, "reload a running unit with ExecReload", s.sd.Reload(ctx, u), "done")
	s.jobResult(t, "restart again", s.sd.Restart(ctx, u), "done")
	// Stopped, it cannot be reloaded: the job's result is "invalid".
	m := s.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := m.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StopUnit", 0, u, "replace").Err; err != nil {
		t.Fatalf("%s: stop %s: %v", s.tg.Name, u, err)
	}
	s.awaitInactive(t, u)
	s.jobResult(t, "reload a stopped unit with ExecReload", s.sd.Reload(ctx, u), "invalid")
	// And once a restart of it failed, it does not run either.
	if s.tg.FailJobs != nil {
		s.tg.FailJobs(u)
		s.jobResult(t, "restart made to fail", s.sd.Restart(ctx, u), "failed")
		s.jobResult(t, "reload after a failed restart", s.sd.Reload(ctx, u), "invalid")
	}
}

// awaitInactive waits until systemd has stopped unit: StopUnit returns when the job is
// queued, and the doubles have no job to wait for. Each poll is one property read.
func (s *suite) awaitInactive(t *testing.T, unit string) {
	t.Helper()
	if !s.tg.Runs {
		return // the doubles stop a unit when the job is queued
	}
	m := s.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	for {
		// LoadUnit, not GetUnit: systemd unloads a stopped unit nothing refers to, and
		// GetUnit then says NoSuchUnit ("not loaded").
		var path dbus.ObjectPath
		if err := m.CallWithContext(t.Context(), "org.freedesktop.systemd1.Manager.LoadUnit", 0, unit).Store(&path); err != nil {
			t.Fatalf("%s: load unit %s: %v", s.tg.Name, unit, err)
		}
		v, err := s.conn.Object("org.freedesktop.systemd1", path).GetProperty("org.freedesktop.systemd1.Unit.ActiveState")
		if err != nil {
			t.Fatalf("%s: ActiveState of %s: %v", s.tg.Name, unit, err)
		}
		if state, _ := v.Value().(string); state == "inactive" || state == "failed" {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %s never stopped", s.tg.Name, unit)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *suite) reloadNotApplicable(t *testing.T) {
	ctx := t.Context()
	u := s.unit(t, "noreload", "[Service]\nExecStart=/bin/sleep infinity\n")
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	s.jobResult(t, "restart", s.sd.Restart(ctx, u), "done")
	s.busError(t, "reload a unit without ExecReload", s.sd.Reload(ctx, u), "org.freedesktop.systemd1.JobTypeNotApplicable")
}

func (s *suite) daemonReload(t *testing.T) {
	ctx := t.Context()
	// The file is read from disk by GetUnitFileState before any reload...
	u := s.unit(t, "new", sleeper)
	s.state(t, u, "disabled")
	// ... and the unit runs once systemd has reloaded.
	if err := s.sd.DaemonReload(ctx); err != nil {
		t.Fatalf("%s: daemon-reload: %v", s.tg.Name, err)
	}
	s.jobResult(t, "restart a unit new since the last daemon-reload", s.sd.Restart(ctx, u), "done")
}

func (s *suite) missing(t *testing.T) {
	ctx := t.Context()
	name := s.prefix + "-missing.service"
	err := s.sd.Restart(ctx, name)
	s.busError(t, "restart a unit that does not exist", err, "org.freedesktop.systemd1.NoSuchUnit")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: restart a missing unit: %v does not match fs.ErrNotExist", s.tg.Name, err)
	}
	s.busError(t, "reload a unit that does not exist", s.sd.Reload(ctx, name), "org.freedesktop.systemd1.NoSuchUnit")
	_, err = s.sd.UnitFileState(ctx, name)
	s.busError(t, "unit file state of a unit that does not exist", err, "org.freedesktop.DBus.Error.FileNotFound")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: unit file state of a missing unit: %v does not match fs.ErrNotExist", s.tg.Name, err)
	}
	s.busError(t, "enable a unit that does not exist", s.sd.Enable(ctx, name), "org.freedesktop.systemd1.NoSuchUnit")
	s.busError(t, "disable a unit that does not exist", s.sd.Disable(ctx, name), "org.freedesktop.systemd1.NoSuchUnit")
}
