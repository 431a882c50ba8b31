package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/model"
)

// syncBuffer is a bytes.Buffer written from one goroutine and read from another.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitEnd waits until the session has ended, and returns how (sess.Wait's error).
func (tm *terminal) waitEnd(ctx context.Context, t *testing.T) error {
	t.Helper()
	select {
	case <-tm.ended:
		return tm.waitErr
	case <-ctx.Done():
		t.Fatalf("the session did not end; it showed:\n%s\nstderr: %s", tm.screen(), tm.stderr.String())
		return nil
	}
}

// alive reports whether the session is still open.
func (tm *terminal) alive() bool {
	select {
	case <-tm.ended:
		return false
	default:
		return true
	}
}

// endedWith waits until the session has ended with exit status 1 and a message
// containing why.
func (tm *terminal) endedWith(ctx context.Context, t *testing.T, why string) {
	t.Helper()
	err := tm.waitEnd(ctx, t)
	var exit *gossh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 1 {
		t.Errorf("the session ended with %v, want exit status 1", err)
	}
	if !strings.Contains(tm.stderr.String(), why) {
		t.Errorf("the session ended saying %q, want %q", tm.stderr.String(), why)
	}
}

// heapInUse is the heap the process holds after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHugeWindow: a read-only key asking for an 8000x8000 terminal (64 million cells;
// before the clamp, the renderer's buffer ran the server out of memory: every session
// dropped) gets a 500x300 one, as do its resizes and the in-band size reports a client
// can type; the server's heap grows by about what a session at the limit takes, and
// it serves the next session.
func TestHugeWindow(t *testing.T) {
	s := startServer(t)
	base := heapInUse()
	atLimit := s.openSize(t, "bob", s.readOnly, 500, 300)
	atLimit.waitFor(t, "read-only")
	perSession := int64(heapInUse()) - int64(base)
	t.Logf("a 500x300 session holds %d KiB of heap", perSession>>10)

	huge := s.openSize(t, "bob", s.readOnly, 8000, 8000)
	huge.waitFor(t, "read-only")
	// 1024x1000 is under Bubble Tea's own plausibility bound (1M cells), so only
	// the clamp stops it: unclamped, it takes some 200 MiB.
	if err := huge.sess.WindowChange(1000, 1024); err != nil {
		t.Fatal(err)
	}
	huge.typ(t, "\x1b[8;1000;1024t")      // XTWINOPS size report
	huge.typ(t, "\x1b[48;1000;1024;0;0t") // in-band resize report
	huge.typ(t, "?")
	huge.waitTitle(t, "help")
	grown := int64(heapInUse()) - int64(base)
	t.Logf("with the huge session too, %d KiB", grown>>10)
	// Two sessions at the limit, with as much again for what else the sessions and
	// the collector hold.
	if limit := 4*perSession + 16<<20; grown > limit {
		t.Errorf("with a session at the limit and a huge one open, the heap grew %d MiB, want at most %d MiB", grown>>20, limit>>20)
	}

	next := s.open(t, "alice", s.admin)
	next.waitFor(t, "mcotui-managed")
	if !huge.alive() || !atLimit.alive() {
		t.Error("a session ended")
	}
}

// TestHandshakeTimeout: a TCP connection that never speaks SSH is closed after the
// handshake timeout.
func TestHandshakeTimeout(t *testing.T) {
	s := startServer(t, func(o *Options) { o.Limits.HandshakeTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server sends its version line, then waits for ours, which never comes;
	// reading ends when the server closes the connection.
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the silent connection: %v", err)
	}
	if !strings.HasPrefix(string(got), "SSH-2.0-") {
		t.Errorf("the server sent %q", got)
	}
}

// TestIdleTimeout: a session whose client sends nothing, and whose screen is still, is
// ended after the idle timeout, saying why; one whose client types outlives the idle
// timeout twice over.
func TestIdleTimeout(t *testing.T) {
	ctx := kubetest.Context(t)
	const idle = 3 * time.Second
	s := startServer(t, func(o *Options) {
		o.Limits.IdleTimeout = idle
		o.TUI.Refresh = -1 // no clock ticking on screen: nothing to watch
	})
	opened := time.Now()
	busy := s.open(t, "alice", s.admin)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Typing a key the TUI ignores, much more often than the idle timeout.
		for {
			select {
			case <-stop:
				return
			case <-time.After(idle / 20):
				_, _ = busy.stdin.Write([]byte("Z"))
			}
		}
	}()
	quiet := s.open(t, "bob", s.readOnly)
	quiet.endedWith(ctx, t, "no input for 3s")
	// Had typing not counted, the busy session would have ended an idle timeout
	// after it opened.
	select {
	case <-busy.ended:
		t.Fatalf("a session whose client types was ended after %s: %s", time.Since(opened).Round(time.Millisecond), busy.stderr.String())
	case <-time.After(time.Until(opened.Add(2 * idle))):
	}
}

// TestWatchingSessionNotIdle: a session whose client types nothing while its screen
// changes (someone watching a rollout: here the status line's clock ticks) outlives
// the idle timeout, and is ended at the longer watch timeout, saying why.
func TestWatchingSessionNotIdle(t *testing.T) {
	ctx := kubetest.Context(t)
	const idle, watch = 2 * time.Second, 6 * time.Second
	s := startServer(t, func(o *Options) { o.Limits.IdleTimeout, o.Limits.WatchTimeout = idle, watch })
	opened := time.Now()
	watching := s.openSize(t, "bob", s.readOnly, 200, 50)
	select {
	case <-watching.ended:
		t.Fatalf("a watching session was ended after %s: %s", time.Since(opened).Round(time.Millisecond), watching.stderr.String())
	case <-time.After(time.Until(opened.Add(2 * idle))):
	}
	watching.endedWith(ctx, t, "no input for 6s (the limit of a session that only watches)")
}

// TestMaxSessionTime: a session is ended at the session time limit however busy.
func TestMaxSessionTime(t *testing.T) {
	ctx := kubetest.Context(t)
	s := startServer(t, func(o *Options) { o.Limits.MaxSessionTime = 2 * time.Second })
	busy := s.open(t, "alice", s.admin)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_, _ = busy.stdin.Write([]byte("Z"))
			}
		}
	}()
	busy.endedWith(ctx, t, "the session time limit (2s) is reached")
}

// TestSessionLimit: over the session limit, a session is turned away saying so; once
// one ends, the next is let in.
func TestSessionLimit(t *testing.T) {
	ctx := kubetest.Context(t)
	s := startServer(t, func(o *Options) { o.Limits.MaxSessions = 2 })
	first := s.open(t, "alice", s.admin)
	second := s.open(t, "bob", s.readOnly)
	first.waitFor(t, "mcotui-managed")
	second.waitFor(t, "read-only")
	third := s.open(t, "bob", s.readOnly)
	third.endedWith(ctx, t, "the server is full (2 sessions)")
	first.typ(t, "q")
	if err := first.waitEnd(ctx, t); err != nil {
		t.Fatalf("quitting: %v", err)
	}
	fourth := s.open(t, "alice", s.admin)
	fourth.waitFor(t, "mcotui-managed")
}

// TestPerAddrLimit: connections one address holds, even ones that never speak SSH,
// count against its limit; over it, a connection is told why and closed before the
// handshake, and once one closes the address may connect again.
func TestPerAddrLimit(t *testing.T) {
	s := startServer(t, func(o *Options) { o.Limits.MaxConnsPerAddr = 2 })
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		// The version line says the server has taken the connection in.
		line := make([]byte, 8)
		if _, err := io.ReadFull(c, line); err != nil || string(line) != "SSH-2.0-" {
			t.Fatalf("a held connection: %q %v", line, err)
		}
		held = append(held, c)
	}
	if client, err := s.dial("alice", s.admin); err == nil {
		client.Close()
		t.Fatal("a third connection from the address was let in")
	}
	if !strings.Contains(s.log.String(), "too many from its address") {
		t.Errorf("the refusal was not logged: %s", s.log.String())
	}
	// The refused client is told why, before the connection closes, in a line an SSH
	// client shows (OpenSSH: "banner line 0: ..."), not only in the server's log.
	refused, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	said, _ := io.ReadAll(refused)
	_ = refused.Close()
	if want := "mcotui: refused: 2 connections from 127.0.0.1 are open"; !strings.Contains(string(said), want) {
		t.Errorf("the refused connection was told %q, want %q", said, want)
	}
	_ = held[0].Close()
	// The server counts the closed connection out once it has seen it closed.
	for {
		var client *gossh.Client
		if client, err = s.dial("alice", s.admin); err == nil {
			client.Close()
			break
		}
		if t.Context().Err() != nil {
			t.Fatalf("no connection after one was closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUnauthenticatedLimit: connections that have not proven a key are capped over all
// addresses (one address alone is held to fewer by MaxConnsPerAddr); one that has
// opened a session no longer counts, so a user gets in while raw connections hold the
// rest.
func TestUnauthenticatedLimit(t *testing.T) {
	s := startServer(t, func(o *Options) { o.Limits.MaxUnauthenticated = 2; o.Limits.MaxConnsPerAddr = 8 })
	raw := func() (net.Conn, error) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = c.Close() })
		line := make([]byte, 8)
		if _, err := io.ReadFull(c, line); err != nil || string(line) != "SSH-2.0-" {
			return nil, fmt.Errorf("version line %q: %v", line, err)
		}
		return c, nil
	}
	first, err := raw()
	if err != nil {
		t.Fatal(err)
	}
	// A user's session, which proves its key, leaves the count.
	s.open(t, "alice", s.admin).waitFor(t, "mcotui-managed")
	if _, err := raw(); err != nil {
		t.Fatalf("a second unauthenticated connection beside a user's session: %v", err)
	}
	if _, err := raw(); err == nil {
		t.Fatal("a third unauthenticated connection was let in")
	}
	if !strings.Contains(s.log.String(), "too many unauthenticated connections") {
		t.Errorf("the refusal was not logged: %s", s.log.String())
	}
	_ = first.Close()
	for {
		if _, err = raw(); err == nil {
			break
		}
		if t.Context().Err() != nil {
			t.Fatalf("no connection after one was closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeKeys rewrites the server's authorized keys file.
func (s *server) writeKeys(t *testing.T, content string) {
	t.Helper()
	// Through a new file renamed over the old, as an editor or a Secret update
	// does, so that the server never reads half a file.
	tmp := s.keysPath + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.keysPath); err != nil {
		t.Fatal(err)
	}
}

func keyLine(k gossh.Signer) string {
	return strings.TrimSpace(string(gossh.MarshalAuthorizedKey(k.PublicKey())))
}

// TestRevocation: removing a key from the file ends its open session, and leaves the
// others; changing a key's role ends its session too.
func TestRevocation(t *testing.T) {
	ctx := kubetest.Context(t)
	s := startServer(t, func(o *Options) { o.KeysPollInterval = 20 * time.Millisecond })
	admin := s.open(t, "alice", s.admin)
	ro := s.open(t, "bob", s.readOnly)
	admin.waitFor(t, "mcotui-managed")
	ro.waitFor(t, "read-only")

	s.writeKeys(t, "role=admin "+keyLine(s.admin)+" alice@example.com\n")
	ro.endedWith(ctx, t, "your key is no longer authorized")
	if _, err := s.dial("bob", s.readOnly); err == nil {
		t.Error("a removed key logged in")
	}
	admin.typ(t, "?")
	admin.waitTitle(t, "help")
	if !admin.alive() {
		t.Fatal("the admin session ended with another key's removal")
	}

	s.writeKeys(t, "role=read-only "+keyLine(s.admin)+" alice@example.com\n")
	admin.endedWith(ctx, t, "your key's role is now read-only")
	again := s.open(t, "alice", s.admin)
	again.waitFor(t, "read-only")
}

// TestFailClosed: an authorized keys file that turns writable by others, stops
// parsing, or disappears ends every session and lets no key in, with a log line
// saying why; once fixed, keys are let in again.
func TestFailClosed(t *testing.T) {
	ctx := kubetest.Context(t)
	s := startServer(t, func(o *Options) { o.KeysPollInterval = 20 * time.Millisecond })
	good := "role=admin " + keyLine(s.admin) + " alice@example.com\nrole=read-only " + keyLine(s.readOnly) + " bob\n"
	for _, c := range []struct {
		name, logged string
		spoil        func()
	}{
		{"writable by others", "writable by group or others", func() {
			if err := os.Chmod(s.keysPath, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"two roles", "2 roles", func() { s.writeKeys(t, "role=admin,role=read-only "+keyLine(s.admin)+"\n") }},
		{"removed", "no such file", func() {
			if err := os.Remove(s.keysPath); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess := s.open(t, "alice", s.admin)
			sess.waitFor(t, "mcotui-managed")
			c.spoil()
			sess.endedWith(ctx, t, "your key is no longer authorized")
			if client, err := s.dial("bob", s.readOnly); err == nil {
				client.Close()
				t.Error("a key was let in by a spoilt file")
			}
			if !strings.Contains(s.log.String(), "authorized keys refused") || !strings.Contains(s.log.String(), c.logged) {
				t.Errorf("the log does not say %q:\n%s", c.logged, s.log.String())
			}
			s.writeKeys(t, good)
			if err := os.Chmod(s.keysPath, 0o600); err != nil {
				t.Fatal(err)
			}
			back := s.open(t, "bob", s.readOnly)
			back.waitFor(t, "read-only")
			back.typ(t, "q")
			if err := back.waitEnd(ctx, t); err != nil {
				t.Errorf("quitting: %v", err)
			}
		})
	}
}

// TestRefusesUnsafeFiles: the server does not start on an authorized keys file or a
// host key that others can write, and the error says the fix.
func TestRefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	_, line := newKey(t)
	keys := dir + "/authorized_keys"
	if err := os.WriteFile(keys, []byte("role=admin "+line+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keys, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	opts := Options{
		HostKeyPath:        dir + "/host_ed25519",
		AuthorizedKeysPath: keys,
		Subscribe:          func() (model.Source, func()) { return nil, func() {} },
	}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "chmod 600 "+keys) {
		t.Fatalf("authorized keys mode 0666: %v", err)
	}
	if err := os.Chmod(keys, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := HostKey(opts.HostKeyPath, os.Getuid(), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(opts.HostKeyPath, 0o660); err != nil {
		t.Fatal(err)
	}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "chmod 600 "+opts.HostKeyPath) {
		t.Fatalf("host key mode 0660: %v", err)
	}
}

// TestNoKeyInWorkingDir: New writes no key into the working directory (wish.NewServer
// does when it finds no host key among its options; that is how a private key ended up
// committed beside this file).
func TestNoKeyInWorkingDir(t *testing.T) {
	keysDir, wd := t.TempDir(), t.TempDir()
	_, line := newKey(t)
	keys := keysDir + "/authorized_keys"
	if err := os.WriteFile(keys, []byte("role=admin "+line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	if _, err := New(Options{
		HostKeyPath:        keysDir + "/host_ed25519",
		AuthorizedKeysPath: keys,
		Subscribe:          func() (model.Source, func()) { return nil, func() {} },
	}); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(wd); err != nil || len(entries) != 0 {
		t.Fatalf("New wrote into the working directory: %v %v", entries, err)
	}
}

// TestDisconnectLogsNoError: a client that closes its connection mid-session is an
// ordinary end: the server's log (slog, its one format) says how the session's program
// stopped and holds no ERROR. (wish's program middleware logged it as an ERROR through
// its own global logger.)
func TestDisconnectLogsNoError(t *testing.T) {
	log := &syncBuffer{}
	s := startServer(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	tm := s.open(t, "bob", s.readOnly)
	tm.waitFor(t, "read-only")
	_ = tm.client.Close()
	for !strings.Contains(log.String(), "session ended") {
		if t.Context().Err() != nil {
			t.Fatalf("the session's end was not logged: %s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "session program stopped") {
		t.Errorf("how the session's program stopped is not in the server's log:\n%s", log.String())
	}
	if strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("a client's disconnect logged an error:\n%s", log.String())
	}
}

// TestCellBudget: the window cells of all sessions together are bounded: a session that
// would pass the budget is turned away saying so (32 sessions at the clamp had held
// 1.4 GB), and once one ends the next is let in.
func TestCellBudget(t *testing.T) {
	ctx := kubetest.Context(t)
	// Room for one 140x40 session (5,600 cells) and a small one, not two large.
	s := startServer(t, func(o *Options) { o.Limits.MaxCells = 8000 })
	first := s.open(t, "alice", s.admin)
	first.waitFor(t, "mcotui-managed")
	second := s.open(t, "bob", s.readOnly)
	second.endedWith(ctx, t, "the server's memory budget is used (the running sessions, 1, hold 5600 of 8000 window cells; this 140x40 window needs 5600)")
	small := s.openSize(t, "bob", s.readOnly, 60, 20)
	small.waitFor(t, "read-only")
}

// TestCellBudgetOnResize: a resize past what the budget has left beside the other
// sessions is clamped to it, height first; shrinking gives cells back.
func TestCellBudgetOnResize(t *testing.T) {
	s := &Server{limits: Limits{MaxCells: 10000}.withDefaults()}
	a, b := &session{}, &session{}
	if w, h := s.fit(a, 100, 50); w != 100 || h != 50 {
		t.Fatalf("a 100x50 within the budget: %dx%d", w, h)
	}
	if w, h := s.fit(b, 200, 100); w != 200 || h != 25 || s.cells != 10000 {
		t.Fatalf("b 200x100 with 5000 cells left: %dx%d, %d cells held", w, h, s.cells)
	}
	if w, h := s.fit(a, 10, 10); w != 10 || h != 10 || s.cells != 5100 {
		t.Fatalf("a shrinks to 10x10: %dx%d, %d cells held", w, h, s.cells)
	}
}
