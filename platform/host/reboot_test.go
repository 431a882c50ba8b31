package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/mcotui/mcotui/platform/host/hosttest"
)

func newLogind(t *testing.T) (*Logind, *hosttest.Logind) {
	t.Helper()
	bus := hosttest.StartBus(t)
	double := hosttest.NewLogind(t, bus)
	l, err := NewLogind(t.Context(), WithBusAddress(bus.Address))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, double
}

// TestRebootChangesTheBootID is the pattern for tests of the agent: the double's OnReboot
// plays the node going down and coming back with a new boot id.
func TestRebootChangesTheBootID(t *testing.T) {
	t.Parallel()
	l, double := newLogind(t)
	bootIDFile := filepath.Join(t.TempDir(), "boot_id")
	must(t, os.WriteFile(bootIDFile, []byte("first-boot\n"), 0o644))
	double.OnReboot(func() {
		must(t, os.WriteFile(bootIDFile, []byte("second-boot\n"), 0o644))
	})
	ctx := t.Context()

	if preparing, err := l.PreparingForShutdown(ctx); err != nil || preparing {
		t.Fatalf("before reboot: preparing %v, %v", preparing, err)
	}
	must(t, l.Reboot(ctx))
	if double.Reboots() != 1 {
		t.Fatalf("reboots = %d, want 1", double.Reboots())
	}
	if got := double.Calls(); len(got) != 1 || got[0].String() != "Reboot false" {
		t.Fatalf("calls = %v, want one non-interactive Reboot", got)
	}
	if preparing, err := l.PreparingForShutdown(ctx); err != nil || !preparing {
		t.Fatalf("after an accepted reboot: preparing %v, %v", preparing, err)
	}
	if id, err := BootID(bootIDFile); err != nil || id != "second-boot" {
		t.Fatalf("boot id after reboot = %q, %v", id, err)
	}
	double.Boot()
	if preparing, _ := l.PreparingForShutdown(ctx); preparing {
		t.Fatal("still preparing for shutdown after boot")
	}
}

func TestRebootRefusalIsReturned(t *testing.T) {
	t.Parallel()
	l, double := newLogind(t)
	double.FailReboot("org.freedesktop.login1.BlockedByInhibitor", "Operation denied due to active block inhibitor")

	err := l.Reboot(t.Context())
	var de dbus.Error
	if !errors.As(err, &de) || de.Name != "org.freedesktop.login1.BlockedByInhibitor" {
		t.Fatalf("refused reboot: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "reboot through logind") || !strings.Contains(msg, "block inhibitor") {
		t.Fatalf("error %q does not say what failed and why", msg)
	}
	if double.Reboots() != 0 {
		t.Fatalf("a refused reboot was counted")
	}
	if preparing, err := l.PreparingForShutdown(t.Context()); err != nil || preparing {
		t.Fatalf("after a refused reboot: preparing %v, %v", preparing, err)
	}
}

func TestNewLogindWithoutLogind(t *testing.T) {
	t.Parallel()
	bus := hosttest.StartBus(t)
	if _, err := NewLogind(t.Context(), WithBusAddress(bus.Address)); err == nil || !strings.Contains(err.Error(), "logind (org.freedesktop.login1) does not answer") {
		t.Fatalf("no logind on the bus: %v", err)
	}
}
