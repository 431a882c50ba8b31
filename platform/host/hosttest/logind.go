package hosttest

import (
	"strconv"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

const (
	logindName   = "org.freedesktop.login1"
	logindPath   = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface  = "org.freedesktop.login1.Manager"
	preparingFor = "PreparingForShutdown"
)

// Logind is a double of systemd-logind's Manager, served as org.freedesktop.login1 at
// /org/freedesktop/login1 on a test's bus. Reboot(interactive) is counted and, unless the
// test made it fail, accepted: like logind it then sends PrepareForShutdown(true) and sets
// the PreparingForShutdown property, and it runs the test's OnReboot function. Nothing is
// rebooted.
type Logind struct {
	conn  *dbus.Conn
	props *prop.Properties

	mu       sync.Mutex
	calls    []Call
	reboots  int
	failure  *dbus.Error
	onReboot func()
}

// NewLogind serves a logind double on bus until t ends.
func NewLogind(t testing.TB, bus *Bus) *Logind {
	t.Helper()
	l := &Logind{conn: bus.serve(t, logindName)}
	m := loginManager{l}
	props, err := prop.Export(l.conn, logindPath, prop.Map{logindIface: {
		preparingFor: {Value: false, Emit: prop.EmitFalse},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.props = props
	node := &introspect.Node{
		Name: string(logindPath),
		Interfaces: []introspect.Interface{introspect.IntrospectData, prop.IntrospectData, {
			Name:       logindIface,
			Methods:    introspect.Methods(m),
			Properties: props.Introspection(logindIface),
			Signals: []introspect.Signal{{Name: "PrepareForShutdown", Args: []introspect.Arg{
				{Name: "start", Type: "b"},
			}}},
		}},
	}
	if err := l.conn.Export(m, logindPath, logindIface); err != nil {
		t.Fatal(err)
	}
	if err := l.conn.Export(introspect.NewIntrospectable(node), logindPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		t.Fatal(err)
	}
	return l
}

// Reboots is how many reboots were accepted.
func (l *Logind) Reboots() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reboots
}

// Calls returns every call received so far, in the order received.
func (l *Logind) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cloneCalls(l.calls)
}

// FailReboot makes later reboots fail with the D-Bus error errName (for example
// "org.freedesktop.login1.BlockedByInhibitor" or "org.freedesktop.DBus.Error.AccessDenied")
// carrying message. An empty errName makes them succeed again.
func (l *Logind) FailReboot(errName, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failure = nil
	if errName != "" {
		l.failure = dbus.NewError(errName, []any{message})
	}
}

// OnReboot makes every accepted reboot run f before logind answers, as if the node went
// down before the caller heard back. A test uses it to stop the agent, change the boot id
// it reads, call Boot and start the agent again. f runs on the double's own D-Bus
// goroutine: it may use the bus, but must not wait for another reboot.
func (l *Logind) OnReboot(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onReboot = f
}

// Boot is the node coming back: PreparingForShutdown is false again, as on a fresh logind.
func (l *Logind) Boot() {
	l.props.SetMust(logindIface, preparingFor, false)
}

// loginManager is the object exported on the bus.
type loginManager struct{ l *Logind }

// Reboot is org.freedesktop.login1.Manager.Reboot(b interactive).
func (m loginManager) Reboot(interactive bool) *dbus.Error {
	l := m.l
	l.mu.Lock()
	l.calls = append(l.calls, Call{Method: "Reboot", Args: []string{strconv.FormatBool(interactive)}})
	if l.failure != nil {
		l.calls[len(l.calls)-1].Err = l.failure.Name
		l.mu.Unlock()
		return l.failure
	}
	l.reboots++
	f := l.onReboot
	l.mu.Unlock()

	l.props.SetMust(logindIface, preparingFor, true)
	_ = l.conn.Emit(logindPath, logindIface+".PrepareForShutdown", true)
	if f != nil {
		f()
	}
	return nil
}

// CanReboot is org.freedesktop.login1.Manager.CanReboot: the double always may.
func (m loginManager) CanReboot() (string, *dbus.Error) { return "yes", nil }
