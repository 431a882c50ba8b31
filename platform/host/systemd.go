package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

const (
	systemdName   = "org.freedesktop.systemd1"
	systemdPath   = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdIface  = "org.freedesktop.systemd1.Manager"
	defaultSysBus = "unix:path=/var/run/dbus/system_bus_socket"
)

// DefaultJobTimeout bounds how long Restart and Reload wait for systemd to finish the job,
// unless WithJobTimeout says otherwise. A service's start and stop each time out after
// 90 s by default, so a restart can take three minutes before systemd itself gives up.
const DefaultJobTimeout = 5 * time.Minute

// Option configures the connections NewSystemd and NewLogind make.
type Option func(*options)

type options struct {
	address    string
	jobTimeout time.Duration
}

// WithBusAddress connects to the D-Bus at address (such as "unix:path=/tmp/bus") instead
// of the system bus. Tests use it to reach their private bus without touching the
// process's environment.
func WithBusAddress(address string) Option { return func(o *options) { o.address = address } }

// WithJobTimeout bounds how long Restart and Reload wait for their job's result
// (DefaultJobTimeout otherwise). Zero or less leaves only the caller's context to bound it.
func WithJobTimeout(d time.Duration) Option { return func(o *options) { o.jobTimeout = d } }

func newOptions(opts []Option) options {
	o := options{address: SystemBusAddress(), jobTimeout: DefaultJobTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// SystemBusAddress is the system bus's address: DBUS_SYSTEM_BUS_ADDRESS when set (as the
// D-Bus specification says), else the well-known socket. An agent in a pod reaches the
// host's bus through that socket mounted into the container.
func SystemBusAddress() string {
	if a := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); a != "" {
		return a
	}
	return defaultSysBus
}

// connect opens a private, authenticated connection to the bus. It lives until ctx is
// done or it is closed.
func connect(ctx context.Context, address string) (*dbus.Conn, error) {
	// EXTERNAL with the numeric uid, as go-systemd does: no user database lookup.
	return dbus.Connect(address, dbus.WithContext(ctx), dbus.WithAuth(dbus.AuthExternal(strconv.Itoa(os.Geteuid()))))
}

// ping checks that a service owns its name on the bus and answers.
func ping(ctx context.Context, conn *dbus.Conn, name string, path dbus.ObjectPath) error {
	return conn.Object(name, path).CallWithContext(ctx, "org.freedesktop.DBus.Peer.Ping", 0).Err
}

// Systemd asks the host's systemd, over D-Bus, to reload its configuration, restart and
// reload units, and enable, disable, mask and unmask unit files. Its methods may be
// called concurrently.
//
// Units are passed by name ("crio.service"), never by path: systemd resolves names in the
// host's own unit search path, which the agent may see under a root prefix
// (/rootfs/etc/systemd/system/...) that systemd knows nothing of. A path is refused before
// anything is sent.
type Systemd struct {
	life       context.Context // NewSystemd's: the connection ends with it
	conn       *sdbus.Conn
	manager    dbus.BusObject // for the Manager methods go-systemd does not wrap
	jobTimeout time.Duration
}

// NewSystemd connects to systemd on the system bus (see SystemBusAddress and
// WithBusAddress) and checks that it answers. The connection lives until ctx is done or
// Close is called, so ctx should be the agent's lifetime, not a dial timeout.
//
// It does not fall back to systemd's private socket (/run/systemd/private), as go-systemd's
// NewWithContext does for root: under a root prefix that socket is not the host's, and a
// test's bus must not be bypassed.
func NewSystemd(ctx context.Context, opts ...Option) (*Systemd, error) {
	o := newOptions(opts)
	var first *dbus.Conn
	conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) {
		c, err := connect(ctx, o.address)
		if err == nil && first == nil {
			first = c // go-systemd dials twice; either connection can make calls
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("connect to systemd on the bus at %s: %w", o.address, err)
	}
	if err := ping(ctx, first, systemdName, systemdPath); err != nil {
		conn.Close()
		return nil, fmt.Errorf("systemd (%s) does not answer on the bus at %s: %w", systemdName, o.address, busErr(err))
	}
	return &Systemd{life: ctx, conn: conn, manager: first.Object(systemdName, systemdPath), jobTimeout: o.jobTimeout}, nil
}

// Close closes the connection.
func (s *Systemd) Close() { s.conn.Close() }

// alive refuses a call once the context the connection was made with has ended. godbus
// closes the connection then, but in a goroutine of its own: without this check a call made
// just after the end could still reach systemd, and whether it did would depend on the
// scheduler.
func (s *Systemd) alive() error {
	if s.life.Err() != nil {
		return fmt.Errorf("the connection to systemd ended with its context: %w", context.Cause(s.life))
	}
	return nil
}

// DaemonReload makes systemd reread all unit files, like systemctl daemon-reload. It
// returns when systemd has finished reloading.
func (s *Systemd) DaemonReload(ctx context.Context) error {
	if err := s.alive(); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", err)
	}
	if err := s.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", busErr(err))
	}
	return nil
}

// Restart restarts unit (starting it if it is not running) and waits for the job to end.
// A result other than "done" is a *JobError.
func (s *Systemd) Restart(ctx context.Context, unit string) error {
	return s.runJob(ctx, "restart", unit, s.conn.RestartUnitContext)
}

// Reload makes unit reload its configuration (its ExecReload=) and waits for the job to
// end. A result other than "done" is a *JobError.
func (s *Systemd) Reload(ctx context.Context, unit string) error {
	return s.runJob(ctx, "reload", unit, s.conn.ReloadUnitContext)
}

// JobError says a systemd job ended with a result other than "done".
type JobError struct {
	Op     string // "restart" or "reload"
	Unit   string
	Result string // "failed", "timeout", "canceled", "dependency", "skipped", ...
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s unit %s: systemd job result %q, not \"done\" (journalctl -u %s says why)", e.Op, e.Unit, e.Result, e.Unit)
}

type jobStarter func(ctx context.Context, name, mode string, ch chan<- string) (int, error)

// runJob queues a job in "replace" mode (as systemctl does) and waits for its result, for
// at most the job timeout.
func (s *Systemd) runJob(ctx context.Context, op, unit string, start jobStarter) error {
	if err := checkUnitName(unit); err != nil {
		return fmt.Errorf("%s unit %q: %w", op, unit, err)
	}
	if err := s.alive(); err != nil {
		return fmt.Errorf("%s unit %s: %w", op, unit, err)
	}
	if s.jobTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.jobTimeout,
			fmt.Errorf("no result within %v: %w", s.jobTimeout, context.DeadlineExceeded))
		defer cancel()
	}
	// Buffered: go-systemd delivers the result while holding the lock every job needs, so
	// a result that comes after we stopped waiting must not block it.
	result := make(chan string, 1)
	if _, err := start(ctx, unit, "replace", result); err != nil {
		return fmt.Errorf("%s unit %s: %w", op, unit, busErr(err))
	}
	select {
	case r := <-result:
		if r != "done" {
			return &JobError{Op: op, Unit: unit, Result: r}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s unit %s: waiting for the job: %w", op, unit, context.Cause(ctx))
	}
}

// Enable enables units persistently, like systemctl enable --force: the links their
// [Install] sections ask for are made in /etc/systemd/system, replacing links of the same
// names that point elsewhere (left by an earlier config, or an Alias= another unit held),
// so that the host converges on the config. A unit with no [Install] section is left as it
// is, as systemctl does; UnitFileState then says "static". A masked unit is refused.
// Units are enabled in order; the first failure stops.
func (s *Systemd) Enable(ctx context.Context, units ...string) error {
	return s.eachUnit("enable", units, func(u string) error {
		_, _, err := s.conn.EnableUnitFilesContext(ctx, []string{u}, false, true)
		return err
	})
}

// Disable removes the persistent links to units (and to their Also= units), like
// systemctl disable. A masked unit stays masked. A unit with no unit file is an error
// matching fs.ErrNotExist, so disable a unit before removing its file.
func (s *Systemd) Disable(ctx context.Context, units ...string) error {
	return s.eachUnit("disable", units, func(u string) error {
		_, err := s.conn.DisableUnitFilesContext(ctx, []string{u}, false)
		return err
	})
}

// Mask links units to /dev/null in /etc/systemd/system, replacing a link of the same name
// (systemctl mask --force). A unit file of that name in /etc/systemd/system is refused by
// systemd even so: remove it first.
func (s *Systemd) Mask(ctx context.Context, units ...string) error {
	return s.eachUnit("mask", units, func(u string) error {
		_, err := s.conn.MaskUnitFilesContext(ctx, []string{u}, false, true)
		return err
	})
}

// Unmask removes the masks. Unmasking a unit that is not masked changes nothing.
func (s *Systemd) Unmask(ctx context.Context, units ...string) error {
	return s.eachUnit("unmask", units, func(u string) error {
		_, err := s.conn.UnmaskUnitFilesContext(ctx, []string{u}, false)
		return err
	})
}

// eachUnit checks every name before changing anything, then calls do for each unit in
// turn, one unit per call so that an error names the unit it is about.
func (s *Systemd) eachUnit(op string, units []string, do func(unit string) error) error {
	for _, u := range units {
		if err := checkUnitName(u); err != nil {
			return fmt.Errorf("%s unit %q: %w", op, u, err)
		}
	}
	if err := s.alive(); err != nil {
		return fmt.Errorf("%s units %s: %w", op, strings.Join(units, ", "), err)
	}
	for _, u := range units {
		if err := do(u); err != nil {
			return fmt.Errorf("%s unit %s: %w", op, u, busErr(err))
		}
	}
	return nil
}

// UnitFileState is what systemctl is-enabled says of unit: "enabled", "disabled",
// "static", "masked", "indirect", "alias", "enabled-runtime", "masked-runtime", ... It is
// read from the unit files on disk (Manager.GetUnitFileState), not from the unit systemd
// has loaded, whose UnitFileState property is only refreshed by a daemon-reload. A unit
// with no unit file is an error matching fs.ErrNotExist.
func (s *Systemd) UnitFileState(ctx context.Context, unit string) (string, error) {
	if err := checkUnitName(unit); err != nil {
		return "", fmt.Errorf("unit file state of %q: %w", unit, err)
	}
	if err := s.alive(); err != nil {
		return "", fmt.Errorf("unit file state of %s: %w", unit, err)
	}
	var state string
	if err := s.manager.CallWithContext(ctx, systemdIface+".GetUnitFileState", 0, unit).Store(&state); err != nil {
		return "", fmt.Errorf("unit file state of %s: %w", unit, busErr(err))
	}
	return state, nil
}

// unitTypes are the suffixes of unit names.
var unitTypes = []string{
	".service", ".socket", ".target", ".timer", ".path", ".mount", ".automount",
	".swap", ".slice", ".scope", ".device",
}

// checkUnitName accepts what systemd accepts as a unit name (unit_name_is_valid): at most
// 255 bytes of letters, digits and ":-_.\@", at most one "@", and a unit type suffix.
func checkUnitName(name string) error {
	if strings.ContainsRune(name, '/') {
		return errors.New("a path, not a unit name: systemd looks units up in the host's own search path, so pass the name alone")
	}
	prefix := ""
	for _, t := range unitTypes {
		if p, ok := strings.CutSuffix(name, t); ok {
			prefix = p
			break
		}
	}
	switch {
	case len(name) > 255:
		return errors.New("not a unit name: longer than 255 bytes")
	case prefix == "" || strings.HasPrefix(prefix, "@"):
		return errors.New("not a unit name: it needs a name and a type suffix such as .service")
	case strings.Count(prefix, "@") > 1:
		return errors.New(`not a unit name: more than one "@"`)
	}
	for _, r := range prefix {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(`:-_.\@`, r)) {
			return fmt.Errorf("not a unit name: %q is not allowed in one", r)
		}
	}
	return nil
}

// BusError is a D-Bus error reply from systemd or logind. errors.As finds it, and the
// godbus dbus.Error under it, in the errors this package returns; when systemd says a
// unit or its file does not exist it also matches fs.ErrNotExist.
type BusError struct {
	Name    string // "org.freedesktop.systemd1.NoSuchUnit", ...
	Message string
	err     dbus.Error
}

func (e *BusError) Error() string {
	if e.Message == "" {
		return e.Name
	}
	return e.Message + " (" + e.Name + ")"
}

func (e *BusError) Unwrap() error { return e.err }

// Is makes "no such unit" and "no such file" replies match fs.ErrNotExist.
func (e *BusError) Is(target error) bool {
	return target == fs.ErrNotExist && (e.Name == "org.freedesktop.systemd1.NoSuchUnit" ||
		e.Name == "org.freedesktop.DBus.Error.FileNotFound")
}

// busErr turns a D-Bus error reply into a *BusError and leaves other errors as they are.
func busErr(err error) error {
	var de dbus.Error
	if !errors.As(err, &de) {
		return err
	}
	be := &BusError{Name: de.Name, err: de}
	if len(de.Body) > 0 {
		be.Message, _ = de.Body[0].(string)
	}
	return be
}

// SystemBusAddressUnder is the host's system bus for an agent that sees the host's
// filesystem at root: DBUS_SYSTEM_BUS_ADDRESS when set, else the host's socket under root
// (root/run/dbus/system_bus_socket) when root is not "/", as in a DaemonSet pod with the
// host mounted at /rootfs: the pod's own /var/run/dbus is not the host's, or absent.
// It names /run, not /var/run, because /var/run is a link to /run on the host, and an
// absolute link would lead back into the container's /run.
func SystemBusAddressUnder(root string) string {
	if a := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); a != "" || root == "" || root == "/" {
		return SystemBusAddress()
	}
	return "unix:path=" + strings.TrimSuffix(root, "/") + "/run/dbus/system_bus_socket"
}

// UnitState is where systemd has a unit now (systemctl list-units).
type UnitState struct {
	Name string
	// Load is the unit's LoadState: "loaded", "not-found", "masked", ...
	Load string
	// Active is its ActiveState: "active", "inactive", "failed", "activating",
	// "deactivating", "reloading"; Sub the type's own state ("exited", "dead", ...).
	Active, Sub string
	// Job is whether a job for the unit is queued: at boot, a unit not started yet has
	// its start job waiting, so "inactive" with a job is "not there yet".
	Job bool
}

// Settled reports whether the unit is in a state it stays in on its own: no job queued
// and not between two states.
func (u UnitState) Settled() bool {
	switch u.Active {
	case "activating", "deactivating", "reloading":
		return false
	}
	return !u.Job
}

// UnitStates reads the states of units (Manager.ListUnitsByNames): one per name, in
// order; a unit systemd does not know is "not-found" and "inactive".
func (s *Systemd) UnitStates(ctx context.Context, units ...string) ([]UnitState, error) {
	for _, u := range units {
		if err := checkUnitName(u); err != nil {
			return nil, fmt.Errorf("state of unit %q: %w", u, err)
		}
	}
	if err := s.alive(); err != nil {
		return nil, fmt.Errorf("state of units %s: %w", strings.Join(units, ", "), err)
	}
	var out []struct {
		Name, Description, Load, Active, Sub, Followed string
		Path                                           dbus.ObjectPath
		JobID                                          uint32
		JobType                                        string
		JobPath                                        dbus.ObjectPath
	}
	if err := s.manager.CallWithContext(ctx, systemdIface+".ListUnitsByNames", 0, units).Store(&out); err != nil {
		return nil, fmt.Errorf("state of units %s: %w", strings.Join(units, ", "), busErr(err))
	}
	states := make([]UnitState, len(out))
	for i, u := range out {
		states[i] = UnitState{Name: u.Name, Load: u.Load, Active: u.Active, Sub: u.Sub, Job: u.JobID != 0}
	}
	return states, nil
}
