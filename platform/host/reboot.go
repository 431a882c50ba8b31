package host

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"
)

const (
	logindName  = "org.freedesktop.login1"
	logindPath  = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface = "org.freedesktop.login1.Manager"
)

// Logind asks systemd-logind (org.freedesktop.login1) to reboot the node.
//
// go-systemd's login1.Conn.Reboot discards the reply, so a refused reboot (an inhibitor
// lock, a polkit denial) would look like one in progress. Logind calls the method itself
// and returns the refusal.
type Logind struct {
	conn    *dbus.Conn
	manager dbus.BusObject
}

// NewLogind connects to logind on the system bus (see SystemBusAddress and
// WithBusAddress) and checks that it answers. The connection lives until ctx is done or
// Close is called.
func NewLogind(ctx context.Context, opts ...Option) (*Logind, error) {
	o := newOptions(opts)
	conn, err := connect(ctx, o.address)
	if err != nil {
		return nil, fmt.Errorf("connect to logind on the bus at %s: %w", o.address, err)
	}
	if err := ping(ctx, conn, logindName, logindPath); err != nil {
		conn.Close()
		return nil, fmt.Errorf("logind (%s) does not answer on the bus at %s: %w", logindName, o.address, busErr(err))
	}
	return &Logind{conn: conn, manager: conn.Object(logindName, logindPath)}, nil
}

// Close closes the connection.
func (l *Logind) Close() { l.conn.Close() }

// Reboot asks logind to reboot the node now, without interactive authorization. nil
// means logind accepted the request: the reboot is under way and this process will be
// stopped with everything else, so whatever must survive it has to be on disk first. A
// refusal is returned, as a *BusError.
func (l *Logind) Reboot(ctx context.Context) error {
	if err := l.manager.CallWithContext(ctx, logindIface+".Reboot", 0, false).Err; err != nil {
		return fmt.Errorf("reboot through logind: %w", busErr(err))
	}
	return nil
}

// PreparingForShutdown reports whether logind is taking the node down (its
// PreparingForShutdown property): true once it has accepted a reboot, until the node
// goes down. An agent still running well after a Reboot that returned nil can ask it to
// tell a reboot that is waiting (for delay inhibitors, for the shutdown jobs) from one
// that is not coming.
func (l *Logind) PreparingForShutdown(ctx context.Context) (bool, error) {
	var v dbus.Variant
	err := l.manager.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindIface, "PreparingForShutdown").Store(&v)
	if err != nil {
		return false, fmt.Errorf("read logind's PreparingForShutdown: %w", busErr(err))
	}
	preparing, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("logind's PreparingForShutdown is %s, not a boolean", v.Signature())
	}
	return preparing, nil
}
