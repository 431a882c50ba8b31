// Package hosttest provides test doubles of systemd's Manager and of logind on a private
// D-Bus, for integration tests of mcotui's host adapter and of the agent.
//
// A test starts a private dbus-daemon with StartBus, serves the doubles on it with
// NewSystemd and NewLogind, and points the code under test at the bus: in process with
// host.WithBusAddress(bus.Address), or in a separate process (a real `mcotui agent`) with
// bus.Env() in its environment. The code under test talks through the real go-systemd and
// godbus clients to a real bus; only the services behind the names are doubles.
//
// The systemd double keeps unit-file state where systemd keeps it: as files and symbolic
// links under a root directory (the same directory the agent's host.Root is rooted at),
// laid out exactly as systemctl lays them out. Enabling, disabling, masking and the
// unit-file state are checked against `systemctl --root` by this package's tests.
//
// A missing dbus-daemon fails the test with how to install it; nothing here skips.
package hosttest
