package hosttest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// busConfig is a system-bus-like configuration that lets every local user connect, own
// any name and send anything: the test's processes are the whole bus. No service
// directories, so a call to a name nobody owns fails at once instead of activating.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
`

// startTimeout bounds how long dbus-daemon may take to print its address.
const startTimeout = 10 * time.Second

// Bus is a private dbus-daemon that lives as long as the test that started it.
type Bus struct {
	// Address is the bus's D-Bus address, as DBUS_SYSTEM_BUS_ADDRESS takes it.
	Address string
}

// Env is the environment entry that points a child process's system bus at this bus.
func (b *Bus) Env() string { return "DBUS_SYSTEM_BUS_ADDRESS=" + b.Address }

// StartBus starts a private dbus-daemon for t and stops it when t ends. The daemon is
// found on PATH; without it the test fails and says how to install it.
func StartBus(t testing.TB) *Bus {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatalf("hosttest: dbus-daemon is not on PATH (%v); install it: apt-get install dbus-daemon (Debian, Ubuntu) or dnf install dbus-daemon (Fedora)", err)
	}
	// A socket path must fit in sun_path (108 bytes): t.TempDir() is named after the
	// test and can be longer, so the socket gets a short directory of its own.
	dir, err := os.MkdirTemp("", "hosttest-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	config := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(config, fmt.Appendf(nil, busConfig, filepath.Join(dir, "socket")), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "--config-file="+config, "--nofork", "--nopidfile", "--nosyslog", "--print-address=1")
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stop, err := startOnLockedThread(cmd)
	if err != nil {
		t.Fatalf("hosttest: start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		stop()
	})

	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			t.Fatalf("hosttest: dbus-daemon exited without printing its address: %s", stderr.String())
		}
		return &Bus{Address: addr}
	case <-time.After(startTimeout):
		t.Fatalf("hosttest: dbus-daemon printed no address within %v: %s", startTimeout, stderr.String())
		return nil
	}
}

// Conn connects to the bus as a client and closes the connection when t ends.
func (b *Bus) Conn(t testing.TB) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(b.Address, dbus.WithAuth(dbus.AuthExternal(strconv.Itoa(os.Geteuid()))))
	if err != nil {
		t.Fatalf("hosttest: connect to %s: %v", b.Address, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// serve connects to the bus, takes name, and returns the connection for a double to
// export its objects on.
func (b *Bus) serve(t testing.TB, name string) *dbus.Conn {
	t.Helper()
	conn := b.Conn(t)
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil {
		t.Fatalf("hosttest: request name %s: %v", name, err)
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("hosttest: %s is already served on this bus (reply %v): one double of each kind per bus", name, reply)
	}
	return conn
}

// startOnLockedThread starts cmd from a goroutine locked to its own OS thread, with the
// parent-death signal set. Linux sends that signal when the thread that forked the child
// ends, not the process, so the thread is kept until stop: the daemon then dies with the
// test binary however it ends, and never mid-test because some unrelated thread exited.
func startOnLockedThread(cmd *exec.Cmd) (stop func(), err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		started <- cmd.Start()
		<-release
	}()
	if err := <-started; err != nil {
		close(release)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(release) }) }, nil
}

// SyncBuffer is a bytes.Buffer that many goroutines may write to and read at once: a
// daemon's stderr copier and the test, an agent's log and a failing test's report, a
// terminal's output and the test that waits for a screen. The zero value is empty and
// ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
