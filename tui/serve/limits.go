package serve

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
)

// Limits bound what clients can hold. A zero field takes its default (DefaultLimits):
// a server without limits is not on offer, since one client could take it down for all.
type Limits struct {
	// MaxWidth and MaxHeight clamp every window size a client asks for, at the start
	// and on each resize, before the program sees it: the renderer allocates a buffer
	// of width x height cells, so an 8000x8000 request would take gigabytes.
	MaxWidth, MaxHeight int
	// MaxSessions is how many sessions may run at once, over all clients.
	MaxSessions int
	// MaxCells bounds the window cells (width x height) of all sessions together:
	// the program's memory grows with its window, about 300 bytes a cell (32 sessions
	// at the clamp were measured holding 1.42 GB). A session that would pass it is
	// turned away saying so, and a resize past it is clamped to what is left.
	MaxCells int
	// MaxConnsPerAddr is how many connections one remote address may hold at once,
	// counted from accept, so connections that never finish the handshake count too.
	MaxConnsPerAddr int
	// MaxUnauthenticated is how many connections may be open at once, over all
	// addresses, that have not proven a key: each holds a goroutine and buffers until
	// HandshakeTimeout, and many addresses together would pass MaxConnsPerAddr (sshd's
	// MaxStartups).
	MaxUnauthenticated int
	// HandshakeTimeout closes a connection that has not authenticated by then.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection on which the client has sent no input (no
	// keystroke, no resize) for that long, unless its screen is changing: someone
	// watching a long rollout types nothing. The client's keepalives do not count.
	IdleTimeout time.Duration
	// WatchTimeout closes a connection without input for that long even though its
	// screen changes: the longer limit of a watching session, since a forgotten
	// terminal's screen changes too (ages tick).
	WatchTimeout time.Duration
	// MaxSessionTime closes a connection that long after it was accepted, however
	// busy.
	MaxSessionTime time.Duration
}

// DefaultLimits are the limits of `mcotui serve` unless flags say otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxWidth:           500,
		MaxHeight:          300,
		MaxSessions:        32,
		MaxCells:           4 * 500 * 300,
		MaxConnsPerAddr:    8,
		MaxUnauthenticated: 64,
		HandshakeTimeout:   20 * time.Second,
		IdleTimeout:        30 * time.Minute,
		WatchTimeout:       4 * time.Hour,
		MaxSessionTime:     12 * time.Hour,
	}
}

// withDefaults fills the zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	fillD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	fill(&l.MaxWidth, d.MaxWidth)
	fill(&l.MaxHeight, d.MaxHeight)
	fill(&l.MaxSessions, d.MaxSessions)
	fill(&l.MaxCells, d.MaxCells)
	fill(&l.MaxConnsPerAddr, d.MaxConnsPerAddr)
	fill(&l.MaxUnauthenticated, d.MaxUnauthenticated)
	fillD(&l.HandshakeTimeout, d.HandshakeTimeout)
	fillD(&l.IdleTimeout, d.IdleTimeout)
	fillD(&l.WatchTimeout, d.WatchTimeout)
	l.WatchTimeout = max(l.WatchTimeout, l.IdleTimeout)
	fillD(&l.MaxSessionTime, d.MaxSessionTime)
	return l
}

// clamp bounds a window size to the limits.
func (l Limits) clamp(width, height int) (int, int) {
	return max(0, min(width, l.MaxWidth)), max(0, min(height, l.MaxHeight))
}

// connection is what the server tracks of one TCP connection, from accept to close.
type connection struct {
	net.Conn
	srv  *Server
	addr string // the remote host, without the port: what MaxConnsPerAddr counts
	ctx  ssh.Context

	lastInput  atomic.Int64 // unix nanoseconds of the client's last input
	lastOutput atomic.Int64 // unix nanoseconds of the last screen change sent to it
	// authed is set, under the server's mu, once the connection has proven a key and
	// opened a session: it no longer counts against MaxUnauthenticated.
	authed    bool
	closeOnce sync.Once
	idle, max *time.Timer

	mu       sync.Mutex
	sessions map[*session]struct{}
	reason   string // why the server ended the connection, once it has
	closed   bool
}

// accept is the server's ConnCallback: it refuses a connection over its address's
// limit before any SSH is spoken, and starts the connection's idle and session-time
// clocks.
func (s *Server) accept(ctx ssh.Context, nc net.Conn) net.Conn {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	s.mu.Lock()
	if s.perAddr[addr] >= s.limits.MaxConnsPerAddr {
		s.mu.Unlock()
		s.log.Warn("refused a connection: too many from its address", "remote", nc.RemoteAddr().String(), "limit", s.limits.MaxConnsPerAddr)
		// Said before any SSH is spoken, as a line before the version exchange
		// (RFC 4253 4.2 lets a server send such lines): OpenSSH prints it
		// ("banner line 0: ...") instead of a bare connection reset. The write is
		// bounded: a client that reads nothing does not hold the accept loop.
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = fmt.Fprintf(nc, "mcotui: refused: %d connections from %s are open, the most one address may hold; close one and try again\r\n", s.limits.MaxConnsPerAddr, addr)
		return nil // the ssh package closes it
	}
	if s.unauthenticated >= s.limits.MaxUnauthenticated {
		s.mu.Unlock()
		s.log.Warn("refused a connection: too many unauthenticated connections", "remote", nc.RemoteAddr().String(), "limit", s.limits.MaxUnauthenticated)
		return nil
	}
	s.perAddr[addr]++
	s.unauthenticated++
	c := &connection{Conn: nc, srv: s, addr: addr, ctx: ctx, sessions: map[*session]struct{}{}}
	s.conns[c] = struct{}{}
	s.mu.Unlock()

	c.lastInput.Store(time.Now().UnixNano())
	c.lastOutput.Store(time.Now().UnixNano())
	ctx.SetValue(connectionKey{}, c)
	// The timers are set under the lock their callbacks take, so that a callback
	// never sees a timer not yet set.
	c.mu.Lock()
	c.idle = time.AfterFunc(s.limits.IdleTimeout, c.checkIdle)
	c.max = time.AfterFunc(s.limits.MaxSessionTime, func() {
		c.end(fmt.Sprintf("the session time limit (%s) is reached", s.limits.MaxSessionTime))
	})
	c.mu.Unlock()
	return c
}

type connectionKey struct{}

func connectionOf(ctx ssh.Context) *connection {
	c, _ := ctx.Value(connectionKey{}).(*connection)
	return c
}

// Close releases the connection's place in the limits; the ssh package calls it once
// the connection is done, and end calls it to cut a connection off.
func (c *connection) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.idle.Stop()
		c.max.Stop()
		c.mu.Unlock()
		s := c.srv
		s.mu.Lock()
		delete(s.conns, c)
		if s.perAddr[c.addr]--; s.perAddr[c.addr] <= 0 {
			delete(s.perAddr, c.addr)
		}
		if !c.authed {
			s.unauthenticated--
		}
		s.mu.Unlock()
	})
	return err
}

// authenticated takes the connection out of the unauthenticated count, once.
func (c *connection) authenticated() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.authed {
		c.authed = true
		if _, open := s.conns[c]; open {
			s.unauthenticated--
		}
	}
}

// touch records input from the client.
func (c *connection) touch() { c.lastInput.Store(time.Now().UnixNano()) }

// shown records a screen change sent to the client.
func (c *connection) shown() { c.lastOutput.Store(time.Now().UnixNano()) }

// checkIdle ends the connection when the client has been silent for the idle timeout
// and its screen has not changed in as long, or silent for the watch timeout; and
// otherwise looks again when it would be.
func (c *connection) checkIdle() {
	l := c.srv.limits
	silent := time.Since(time.Unix(0, c.lastInput.Load()))
	still := time.Since(time.Unix(0, c.lastOutput.Load()))
	var next time.Duration
	switch {
	case silent < l.IdleTimeout:
		next = l.IdleTimeout - silent
	case still < l.IdleTimeout && silent < l.WatchTimeout:
		// Watching: look again when the screen would have been still long enough,
		// or the watch ends.
		next = min(l.IdleTimeout-still, l.WatchTimeout-silent)
	case still < l.IdleTimeout:
		c.end(fmt.Sprintf("no input for %s (the limit of a session that only watches)", l.WatchTimeout))
		return
	default:
		c.end(fmt.Sprintf("no input for %s", l.IdleTimeout))
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.idle.Reset(next)
	}
	c.mu.Unlock()
}

// end cuts the connection off, saying why: each of its sessions' programs is stopped,
// so that the terminal is restored, the reason is written to the session, and the
// connection is closed.
func (c *connection) end(reason string) {
	c.mu.Lock()
	if c.reason != "" || c.closed {
		c.mu.Unlock()
		return
	}
	c.reason = reason
	sessions := make([]*session, 0, len(c.sessions))
	for sess := range c.sessions {
		sessions = append(sessions, sess)
	}
	c.mu.Unlock()
	c.srv.log.Info("ending a connection", "remote", c.RemoteAddr().String(), "reason", reason)
	if len(sessions) == 0 {
		_ = c.Close()
		return
	}
	for _, sess := range sessions {
		sess.cancel()
	}
	// A program that does not stop on its context (it should) still loses its
	// connection.
	time.AfterFunc(programStopGrace, func() { _ = c.Close() })
}

// programStopGrace is how long end waits for a session's program to stop before it
// closes the connection under it.
const programStopGrace = 5 * time.Second

func (c *connection) endedBecause() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// session is an ssh.Session as the program sees it: its window sizes clamped, its
// input counted as activity, and a context of its own that end cancels.
type session struct {
	ssh.Session
	conn   *connection
	key    Key // the proven key's entry when the session started
	limits Limits
	ctx    context.Context
	cancel context.CancelFunc
	// cells is the window cells the session holds of Limits.MaxCells, under the
	// server's mu.
	cells int
}

// Read is the client's input, which keeps the connection from idling.
func (s *session) Read(p []byte) (int, error) {
	n, err := s.Session.Read(p)
	if n > 0 {
		s.conn.touch()
	}
	return n, err
}

// Write is what the program draws: a changing screen, which keeps a watching
// connection from idling (Limits.WatchTimeout bounds it).
func (s *session) Write(p []byte) (int, error) {
	n, err := s.Session.Write(p)
	if n > 0 {
		s.conn.shown()
	}
	return n, err
}

// Pty is the session's terminal with its size clamped. Later resizes reach the program
// as tea.WindowSizeMsg, which the program's filter clamps.
func (s *session) Pty() (ssh.Pty, <-chan ssh.Window, bool) {
	pty, winch, ok := s.Session.Pty()
	pty.Window.Width, pty.Window.Height = s.limits.clamp(pty.Window.Width, pty.Window.Height)
	return pty, winch, ok
}

// filter clamps every window size the program is told, from the SSH client's resizes
// and from the terminal's in-band resize reports alike (a client can type one), and
// counts a resize as activity. An SSH session cannot be suspended, so a suspend
// resumes at once (as wish's bubbletea.MakeOptions does; a program has one filter,
// so this one replaces that).
func (s *session) filter(_ tea.Model, msg tea.Msg) tea.Msg {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		s.conn.touch()
		msg.Width, msg.Height = s.conn.srv.fit(s, msg.Width, msg.Height)
		return msg
	case tea.SuspendMsg:
		return tea.ResumeMsg{}
	}
	return msg
}

// fit clamps a session's new window size to the limits and to what the cell budget has
// left beside the other sessions (the height is cut first), and takes its cells.
func (s *Server) fit(sess *session, width, height int) (int, int) {
	width, height = s.limits.clamp(width, height)
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.limits.MaxCells - (s.cells - sess.cells)
	if width*height > left {
		width = min(width, left)
		height = left / max(width, 1)
	}
	s.cells += width*height - sess.cells
	sess.cells = width * height
	return width, height
}

// guard admits a session within the session limit, and runs it as a *session.
func (s *Server) guard(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		c := connectionOf(sess.Context())
		if c == nil {
			// Every connection passes accept; one that did not is not served.
			wish.Fatalln(sess, "mcotui: internal error: untracked connection")
			return
		}
		k, ok := s.role(sess)
		if !ok {
			// The key was removed from the file since authentication, or the
			// session has no proven key at all.
			wish.Fatalln(sess, "mcotui: your key is not (or no longer) authorized")
			return
		}
		// The handshake is over, the key's signature checked (the key callback alone
		// is also asked about keys a client merely offers, and public keys are public).
		c.authenticated()
		s.mu.Lock()
		if s.sessions >= s.limits.MaxSessions {
			s.mu.Unlock()
			s.log.Warn("refused a session: the server is full", "user", sess.User(), "remote", sess.RemoteAddr().String(), "limit", s.limits.MaxSessions)
			wish.Fatalln(sess, fmt.Sprintf("mcotui: the server is full (%d sessions); try again later", s.limits.MaxSessions))
			return
		}
		pty, _, _ := sess.Pty()
		w, h := s.limits.clamp(pty.Window.Width, pty.Window.Height)
		if s.cells+w*h > s.limits.MaxCells {
			used, n := s.cells, s.sessions
			s.mu.Unlock()
			s.log.Warn("refused a session: the memory budget is used", "user", sess.User(), "remote", sess.RemoteAddr().String(), "cells", w*h, "used", used, "limit", s.limits.MaxCells)
			wish.Fatalln(sess, fmt.Sprintf("mcotui: the server's memory budget is used (the running sessions, %d, hold %d of %d window cells; this %dx%d window needs %d); try again later or with a smaller window",
				n, used, s.limits.MaxCells, w, h, w*h))
			return
		}
		s.sessions++
		s.cells += w * h
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(sess.Context())
		defer cancel()
		ws := &session{Session: sess, conn: c, key: k, limits: s.limits, ctx: ctx, cancel: cancel, cells: w * h}
		defer func() {
			s.mu.Lock()
			s.sessions--
			s.cells -= ws.cells
			s.mu.Unlock()
		}()
		c.mu.Lock()
		if c.reason != "" {
			c.mu.Unlock()
			wish.Fatalln(sess, "mcotui: "+c.reason)
			return
		}
		c.sessions[ws] = struct{}{}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.sessions, ws)
			c.mu.Unlock()
		}()

		next(ws)

		if reason := c.endedBecause(); reason != "" {
			wish.Fatalln(sess, "mcotui: "+reason)
			_ = c.Close()
		}
	}
}
