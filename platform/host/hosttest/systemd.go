package hosttest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
)

const (
	systemdName  = "org.freedesktop.systemd1"
	systemdPath  = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface = "org.freedesktop.systemd1.Manager"
)

// Call is one method call a double received.
type Call struct {
	Method string   // the D-Bus member: "Reload", "RestartUnit", "EnableUnitFiles", "Reboot", ...
	Args   []string // the arguments as text: unit names, the job mode, "runtime=false", "force=true"
	Err    string   // the D-Bus error name the call was answered with; "" when it succeeded
}

// String is the call as a test writes it: "RestartUnit foo.service replace", followed by
// " -> " and the error name when it failed.
func (c Call) String() string {
	s := strings.Join(append([]string{c.Method}, c.Args...), " ")
	if c.Err != "" {
		s += " -> " + c.Err
	}
	return s
}

// Systemd is a double of systemd's Manager, served as org.freedesktop.systemd1 at
// /org/freedesktop/systemd1 on a test's bus. It implements the calls mcotui makes through
// go-systemd:
//
//   - Reload (daemon-reload), which it counts;
//   - StartUnit, StopUnit, RestartUnit and ReloadUnit, which queue a job and announce its
//     end with the JobRemoved signal, result "done" unless the test says otherwise. Like
//     systemd they fail for a unit with no unit file (NoSuchUnit), a masked unit
//     (UnitMasked), and a reload of a service with no ExecReload= (JobTypeNotApplicable).
//     Units are not run: their files are all the double knows of them, and each is taken
//     to be running, as a booted host's units are, until it is stopped or a start or
//     restart job of it does not end "done"; a reload of a unit that does not run ends
//     "invalid", as systemd's does (real systemd also says so of a unit never started,
//     which the double takes for running);
//   - EnableUnitFiles, DisableUnitFiles, MaskUnitFiles, UnmaskUnitFiles and
//     GetUnitFileState, on the files under its root directory, as systemctl does them;
//   - ListUnitsByNames, from the above: "active" for a unit that runs, "failed" for one
//     whose last start or restart job failed or that a test said failed
//     (SetUnitFailed: a unit that failed at boot), "inactive" for one stopped, with no
//     job queued. It is a read and is not recorded among the calls.
//
// Every call is recorded, in order. Units are names, never paths: a path is refused.
type Systemd struct {
	conn  *dbus.Conn
	files unitFiles

	mu       sync.Mutex
	calls    []Call
	lastJob  uint32
	results  map[callKey]string
	holds    map[callKey]chan struct{}
	failures map[callKey]*dbus.Error
	// stopped are the units that do not run: stopped, or whose last start failed.
	stopped map[string]bool
	// failed are the units a test said failed (SetUnitFailed), until started again.
	failed map[string]bool
}

// callKey selects calls of one method for one unit; an empty unit selects every unit.
type callKey struct{ method, unit string }

// NewSystemd serves a systemd double on bus whose unit files are under root (a directory
// laid out like the host's "/": etc/systemd/system, usr/lib/systemd/system, ...). It stops
// serving when t ends.
func NewSystemd(t testing.TB, bus *Bus, root string) *Systemd {
	t.Helper()
	s := &Systemd{
		files:    unitFiles{root: root},
		results:  map[callKey]string{},
		holds:    map[callKey]chan struct{}{},
		failures: map[callKey]*dbus.Error{},
		stopped:  map[string]bool{},
		failed:   map[string]bool{},
	}
	s.conn = bus.serve(t, systemdName)
	m := manager{s}
	node := &introspect.Node{
		Name: string(systemdPath),
		Interfaces: []introspect.Interface{introspect.IntrospectData, {
			Name:    managerIface,
			Methods: introspect.Methods(m),
			Signals: []introspect.Signal{{Name: "JobRemoved", Args: []introspect.Arg{
				{Name: "id", Type: "u"}, {Name: "job", Type: "o"}, {Name: "unit", Type: "s"}, {Name: "result", Type: "s"},
			}}},
		}},
	}
	if err := s.conn.Export(m, systemdPath, managerIface); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Export(introspect.NewIntrospectable(node), systemdPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let held jobs end (before the connection closes) so no goroutine outlives the test.
		s.mu.Lock()
		defer s.mu.Unlock()
		for k, ch := range s.holds {
			close(ch)
			delete(s.holds, k)
		}
	})
	return s
}

// Calls returns every call received so far, in the order received.
func (s *Systemd) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneCalls(s.calls)
}

// Count is how many calls of method succeeded for unit (any unit when unit is ""). For a
// job method, success means the job was queued, whatever its result.
func (s *Systemd) Count(method, unit string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Method == method && c.Err == "" && (unit == "" || (len(c.Args) > 0 && c.Args[0] == unit)) {
			n++
		}
	}
	return n
}

// DaemonReloads is how many daemon-reloads succeeded.
func (s *Systemd) DaemonReloads() int { return s.Count("Reload", "") }

// Restarts is how many restart jobs were queued for unit.
func (s *Systemd) Restarts(unit string) int { return s.Count("RestartUnit", unit) }

// Reloads is how many reload jobs were queued for unit.
func (s *Systemd) Reloads(unit string) int { return s.Count("ReloadUnit", unit) }

// SetJobResult makes later jobs of method ("RestartUnit", "ReloadUnit", "StartUnit",
// "StopUnit") for unit ("" for any) end with result: "failed", "timeout", "canceled",
// "dependency", "skipped", or "done" again.
func (s *Systemd) SetJobResult(method, unit, result string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[callKey{method, unit}] = result
}

// HoldJobs keeps later jobs of method for unit ("" for any) running: they are queued and
// answered, but JobRemoved is not sent until release is called (or the test ends). A test
// uses it to see a caller time out or give up, or to kill an agent in the middle of a job.
func (s *Systemd) HoldJobs(method, unit string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := callKey{method, unit}
	ch, ok := s.holds[k]
	if !ok {
		ch = make(chan struct{})
		s.holds[k] = ch
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.holds[k] == ch {
			close(ch)
			delete(s.holds, k)
		}
	}
}

// FailMethod makes later calls of method for unit ("" for any unit, and for Reload) fail
// with the D-Bus error errName ("org.freedesktop.systemd1.NoSuchUnit",
// "org.freedesktop.DBus.Error.AccessDenied", ...) carrying message. An empty errName
// stops the failures.
func (s *Systemd) FailMethod(method, unit, errName, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errName == "" {
		delete(s.failures, callKey{method, unit})
		return
	}
	s.failures[callKey{method, unit}] = dbus.NewError(errName, []any{message})
}

// begin records a call and returns the failure the test asked for, if any. It is called
// with s.mu held; the caller sets the call's Err through end.
func (s *Systemd) begin(method string, units []string, args ...string) (int, *dbus.Error) {
	s.calls = append(s.calls, Call{Method: method, Args: append(append([]string{}, units...), args...)})
	i := len(s.calls) - 1
	if err := s.failures[callKey{method, ""}]; err != nil {
		return i, err
	}
	for _, u := range units {
		if err := s.failures[callKey{method, u}]; err != nil {
			return i, err
		}
	}
	for _, u := range units {
		if err := checkName(u); err != nil {
			return i, err
		}
	}
	return i, nil
}

// end turns err into the call's D-Bus reply and notes its name in the call log.
func (s *Systemd) end(i int, err error) *dbus.Error {
	if err == nil {
		return nil
	}
	var de *dbus.Error
	var be *busError
	switch {
	case errors.As(err, &de):
	case errors.As(err, &be):
		de = dbus.NewError(be.name, []any{be.message})
	default:
		de = dbus.MakeFailedError(err)
	}
	s.calls[i].Err = de.Name
	return de
}

// checkName refuses what systemd would not take, and paths, which the double does not
// serve: the agent sees the host under a root prefix that systemd does not.
func checkName(name string) *dbus.Error {
	if name == "" || strings.ContainsRune(name, '/') || !strings.Contains(name, ".") {
		return dbus.NewError("org.freedesktop.DBus.Error.InvalidArgs", []any{fmt.Sprintf("Unit name %s is not valid.", name)})
	}
	return nil
}

func flag(name string, v bool) string { return name + "=" + strconv.FormatBool(v) }

func cloneCalls(calls []Call) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = Call{Method: c.Method, Args: append([]string(nil), c.Args...), Err: c.Err}
	}
	return out
}

// manager is the object exported on the bus: its exported methods are the D-Bus methods,
// kept apart from Systemd's methods, which are for the test.
type manager struct{ s *Systemd }

// Reload is systemctl daemon-reload.
func (m manager) Reload() *dbus.Error {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.begin("Reload", nil)
	return s.end(i, errOrNil(err))
}

func (m manager) StartUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	return m.job("StartUnit", name, mode)
}

func (m manager) StopUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	return m.job("StopUnit", name, mode)
}

func (m manager) RestartUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	return m.job("RestartUnit", name, mode)
}

func (m manager) ReloadUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	return m.job("ReloadUnit", name, mode)
}

// job queues a job and announces its end with JobRemoved(id, job, unit, result) once it
// is not held.
func (m manager) job(method, name, mode string) (dbus.ObjectPath, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin(method, []string{name}, mode)
	if derr != nil {
		return "", s.end(i, derr)
	}
	un, err := s.files.lookup(name)
	switch {
	case err != nil:
		return "", s.end(i, err)
	case un.masked:
		return "", s.end(i, &busError{"org.freedesktop.systemd1.UnitMasked", fmt.Sprintf("Unit %s is masked.", name)})
	case un.notFound:
		return "", s.end(i, &busError{"org.freedesktop.systemd1.NoSuchUnit", fmt.Sprintf("Unit %s not found.", name)})
	case method == "ReloadUnit" && strings.HasSuffix(name, ".service") && !un.reloadCmd:
		return "", s.end(i, &busError{"org.freedesktop.systemd1.JobTypeNotApplicable", fmt.Sprintf("Job type reload is not applicable for unit %s.", name)})
	}
	s.lastJob++
	id := s.lastJob
	job := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
	result := "done"
	if r, ok := s.results[callKey{method, ""}]; ok {
		result = r
	}
	if r, ok := s.results[callKey{method, name}]; ok {
		result = r
	}
	_, explicit := s.results[callKey{method, name}]
	switch {
	case method == "ReloadUnit" && s.stopped[name] && !explicit:
		// systemd: "Unit cannot be reloaded because it is inactive." (job result invalid)
		result = "invalid"
	case method == "StartUnit" || method == "RestartUnit":
		s.stopped[name] = result != "done"
		s.failed[name] = result != "done"
	case method == "StopUnit" && result == "done":
		s.stopped[name] = true
	}
	hold := s.holds[callKey{method, name}]
	if hold == nil {
		hold = s.holds[callKey{method, ""}]
	}
	// Sent from another goroutine, so a client may see it before the reply; go-systemd
	// waits for the reply before it looks the job up.
	go func() {
		if hold != nil {
			<-hold
		}
		_ = s.conn.Emit(systemdPath, managerIface+".JobRemoved", id, job, name, result)
	}()
	return job, nil
}

// SetUnitFailed makes unit failed, as a unit whose start at boot failed is, until a
// start or restart job of it succeeds.
func (s *Systemd) SetUnitFailed(unit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[unit] = true
	s.stopped[unit] = true
}

// listedUnit is one element of ListUnitsByNames' answer, a(ssssssouso).
type listedUnit struct {
	Name, Description, Load, Active, Sub, Followed string
	Path                                           dbus.ObjectPath
	JobID                                          uint32
	JobType                                        string
	JobPath                                        dbus.ObjectPath
}

func (m manager) ListUnitsByNames(names []string) ([]listedUnit, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]listedUnit, 0, len(names))
	for _, name := range names {
		if derr := checkName(name); derr != nil {
			return nil, derr
		}
		u := listedUnit{Name: name, Load: "loaded", Active: "active", Sub: "running", Path: "/org/freedesktop/systemd1/unit/x", JobPath: "/"}
		un, err := s.files.lookup(name)
		switch {
		case err != nil:
			return nil, &dbus.Error{Name: "org.freedesktop.DBus.Error.Failed", Body: []any{err.Error()}}
		case un.notFound:
			u.Load, u.Active, u.Sub = "not-found", "inactive", "dead"
		case un.masked:
			u.Load, u.Active, u.Sub = "masked", "inactive", "dead"
		case s.failed[name]:
			u.Active, u.Sub = "failed", "failed"
		case s.stopped[name]:
			u.Active, u.Sub = "inactive", "dead"
		}
		out = append(out, u)
	}
	return out, nil
}

func (m manager) EnableUnitFiles(files []string, runtime, force bool) (bool, []unitFileChange, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin("EnableUnitFiles", files, flag("runtime", runtime), flag("force", force))
	if derr != nil {
		return false, nil, s.end(i, derr)
	}
	carries, changes, err := s.files.enable(files, runtime, force)
	return carries, orEmpty(changes), s.end(i, err)
}

func (m manager) DisableUnitFiles(files []string, runtime bool) ([]unitFileChange, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin("DisableUnitFiles", files, flag("runtime", runtime))
	if derr != nil {
		return nil, s.end(i, derr)
	}
	changes, err := s.files.disable(files, runtime)
	return orEmpty(changes), s.end(i, err)
}

func (m manager) MaskUnitFiles(files []string, runtime, force bool) ([]unitFileChange, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin("MaskUnitFiles", files, flag("runtime", runtime), flag("force", force))
	if derr != nil {
		return nil, s.end(i, derr)
	}
	changes, err := s.files.mask(files, runtime, force)
	return orEmpty(changes), s.end(i, err)
}

func (m manager) UnmaskUnitFiles(files []string, runtime bool) ([]unitFileChange, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin("UnmaskUnitFiles", files, flag("runtime", runtime))
	if derr != nil {
		return nil, s.end(i, derr)
	}
	changes, err := s.files.unmask(files, runtime)
	return orEmpty(changes), s.end(i, err)
}

func (m manager) GetUnitFileState(file string) (string, *dbus.Error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, derr := s.begin("GetUnitFileState", []string{file})
	if derr != nil {
		return "", s.end(i, derr)
	}
	state, err := s.files.state(file)
	return state, s.end(i, err)
}

// errOrNil keeps a nil *dbus.Error from becoming a non-nil error.
func errOrNil(err *dbus.Error) error {
	if err == nil {
		return nil
	}
	return err
}

// orEmpty gives D-Bus an empty array rather than a nil slice to encode.
func orEmpty(changes []unitFileChange) []unitFileChange {
	if changes == nil {
		return []unitFileChange{}
	}
	return changes
}
