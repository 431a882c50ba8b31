// Package serve serves the TUI over SSH with charm.land/wish/v2: one Bubble Tea program
// per session, each with its own styles and colour profile (Lip Gloss v2 has no global
// renderer), all fed from one set of informers shared through subscriptions.
//
// Authentication is by public key only, against an authorized keys file that marks each
// key admin or read-only (AuthorizedKeysFormat). The role is decided in the session
// from the key the client proved it holds (ssh.Session.PublicKey), never from the
// authentication callback, which also sees keys a client only offers
// (CVE-2024-45337).
//
// The server expects hostile clients: window sizes are clamped before the program sees
// them, sessions and each address's connections are counted against limits, a
// connection must authenticate within a timeout, and is closed when idle or too old
// (Limits). The authorized keys file is watched, and a key removed from it, or a file
// that turns bad, ends the sessions it had let in.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/activeterm"
	bm "charm.land/wish/v2/bubbletea"
	wishrecover "charm.land/wish/v2/recover"
	gossh "golang.org/x/crypto/ssh"

	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/model"
)

// Options configure a Server.
type Options struct {
	// HostKeyPath is the host key file, generated when missing (see HostKey).
	HostKeyPath string
	// AuthorizedKeysPath is the authorized keys file (see AuthorizedKeysFormat).
	AuthorizedKeysPath string
	// Subscribe returns a new source for one session, and how to end it. Every
	// session subscribes to the same informers (source.Cluster.Subscribe).
	Subscribe func() (model.Source, func())
	// Actions returns the actions of an admin session; user names who acts, for the
	// log. nil serves every session read-only.
	Actions func(user string) action.Actions
	// Logger receives connections, refusals and errors; nil discards.
	Logger *slog.Logger
	// TUI is the base of each session's program options (a test's clock, say); the
	// server sets the source, the actions, read-only mode, the pod reads and the
	// drain forecast.
	TUI tui.Options
	// Pods reads pods, their logs and budgets for the sessions PodReads lets read
	// them; PodReads "" is none.
	Pods     action.Pods
	PodReads PodReads
	// DrainForecast reads the rollout preview's drain forecast for the same sessions
	// as Pods (it lists every pod, budget, claim and volume); nil forecasts none.
	DrainForecast action.DrainForecast
	// Limits bound what clients hold; zero fields take DefaultLimits'.
	Limits Limits
	// KeysPollInterval is how often the authorized keys file is looked at for
	// changes that end sessions; 0 is DefaultKeysPollInterval. (Logins look at it
	// themselves.) Polling rather than inotify: a Kubernetes Secret volume is updated
	// by swapping a symlink, which a watch on the file does not see.
	KeysPollInterval time.Duration
}

// DefaultKeysPollInterval is how soon a removed key's sessions are ended.
const DefaultKeysPollInterval = 2 * time.Second

// Server is the SSH server.
type Server struct {
	opts   Options
	limits Limits
	log    *slog.Logger
	keys   *keyring
	srv    *ssh.Server

	mu            sync.Mutex
	subscriptions map[ssh.Session]func() // each session's, until its program ends
	conns         map[*connection]struct{}
	perAddr       map[string]int // open connections by remote host
	// unauthenticated counts the open connections that have not proven a key.
	unauthenticated int
	// cells are the window cells the running sessions hold (Limits.MaxCells).
	cells    int
	sessions int // sessions running
}

// New returns a server with its host key and authorized keys loaded.
func New(opts Options) (*Server, error) {
	if opts.Subscribe == nil {
		return nil, errors.New("serve: no source to subscribe to")
	}
	s := &Server{
		opts:          opts,
		limits:        opts.Limits.withDefaults(),
		log:           opts.Logger,
		subscriptions: map[ssh.Session]func(){},
		conns:         map[*connection]struct{}{},
		perAddr:       map[string]int{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.KeysPollInterval <= 0 {
		s.opts.KeysPollInterval = DefaultKeysPollInterval
	}
	keys, err := newKeyring(opts.AuthorizedKeysPath, os.Getuid(), s.log)
	if err != nil {
		return nil, err
	}
	s.keys = keys
	signer, err := HostKey(opts.HostKeyPath, os.Getuid(), func(w string) { s.log.Warn(w) })
	if err != nil {
		return nil, err
	}
	// Middlewares run last-listed first: recover guards everything, the log sees every
	// session, activeterm turns away sessions without a terminal, guard holds the
	// session to the limits, then the program, and once it ends, the session's
	// subscription is released.
	srv, err := wish.NewServer(
		// The host key goes in as an option: wish.NewServer writes a new
		// id_ed25519 into the working directory when it finds none among the options.
		func(srv *ssh.Server) error { srv.AddHostKey(signer); return nil },
		wish.WithPublicKeyAuth(s.authenticate),
		wish.WithMiddleware(
			s.release,
			s.runProgram,
			s.guard,
			activeterm.Middleware(),
			s.logSessions,
			wishrecover.MiddlewareWithLogger(printf{s.log}),
		),
	)
	if err != nil {
		return nil, err
	}
	srv.ConnCallback = s.accept
	srv.HandshakeTimeout = s.limits.HandshakeTimeout
	s.srv = srv
	return s, nil
}

// authenticate accepts the keys of the authorized keys file. Only public keys are
// accepted: no password or keyboard-interactive handler is set.
func (s *Server) authenticate(ctx ssh.Context, key ssh.PublicKey) bool {
	_, ok := s.keys.lookup(key)
	if !ok {
		s.log.Info("refused an unknown key", "user", ctx.User(), "remote", ctx.RemoteAddr().String(), "key", fingerprint(key))
	}
	return ok
}

// role is the entry of the key the session proved it holds.
func (s *Server) role(sess ssh.Session) (Key, bool) {
	return s.keys.lookup(sess.PublicKey())
}

// program makes one session's program: its own subscription, its own styles, and the
// actions only for an admin key. sess is the guard's *session.
func (s *Server) program(sess ssh.Session) *tea.Program {
	ws, ok := sess.(*session)
	if !ok {
		wish.Fatalln(sess, "mcotui: internal error: unguarded session")
		return nil
	}
	k := ws.key
	src, unsubscribe := s.opts.Subscribe()
	s.mu.Lock()
	s.subscriptions[sess] = sync.OnceFunc(unsubscribe)
	s.mu.Unlock()
	opts := s.opts.TUI
	opts.ReadOnly = k.Role != Admin
	opts.Actions = nil
	if k.Role == Admin && s.opts.Actions != nil {
		opts.Actions = s.opts.Actions(sess.User() + " (" + k.Name() + ")")
	}
	opts.Pods, opts.NoPods = s.opts.PodReads.sessionPods(s.opts.Pods, k.Role)
	opts.DrainForecast = s.opts.PodReads.sessionDrainForecast(s.opts.DrainForecast, k.Role)
	// NO_COLOR from the client (ssh -o SetEnv=NO_COLOR=1) counts like a local one.
	if slices.ContainsFunc(sess.Environ(), func(e string) bool { return strings.HasPrefix(e, "NO_COLOR=") && e != "NO_COLOR=" }) {
		opts.NoColor = true
	}
	// The filter comes after MakeOptions' own, which it replaces (see session.filter).
	popts := append(bm.MakeOptions(sess), tea.WithContext(ws.ctx), tea.WithFilter(ws.filter))
	return tea.NewProgram(tui.New(src, opts), popts...)
}

// runProgram runs the session's program (wish's bubbletea.MiddlewareWithProgramHandler,
// but logging through the server's slog logger: wish's logs to its own global logger,
// in another format, and calls a client's ordinary disconnect an error).
func (s *Server) runProgram(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		program := s.program(sess)
		if program == nil {
			next(sess)
			return
		}
		_, windowChanges, ok := sess.Pty()
		if !ok {
			wish.Fatalln(sess, "mcotui: no terminal; connect with ssh -t")
			return
		}
		ctx, cancel := context.WithCancel(sess.Context())
		go func() {
			// Its own goroutine, which the recover middleware cannot guard: a panic
			// here ends this session, not the server.
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("panic in a session's window change handler", "user", sess.User(), "panic", r, "stack", string(debug.Stack()))
					program.Quit()
				}
			}()
			for {
				select {
				case <-ctx.Done():
					program.Quit()
					return
				case w := <-windowChanges:
					program.Send(tea.WindowSizeMsg{Width: w.Width, Height: w.Height})
				}
			}
		}()
		_, err := program.Run()
		switch {
		case err == nil:
		case errors.Is(err, tea.ErrProgramKilled), errors.Is(err, context.Canceled), errors.Is(err, io.EOF):
			// The client went away, or the server ended the connection: said at
			// the session's end already.
			s.log.Debug("session program stopped", "user", sess.User(), "remote", sess.RemoteAddr().String(), "cause", err)
		default:
			s.log.Error("session program failed", "user", sess.User(), "remote", sess.RemoteAddr().String(), "error", err)
		}
		// Kill restores the terminal if the program is still running (it panicked).
		program.Kill()
		cancel()
		next(sess)
	}
}

// release ends the session's subscription once its program has ended: the user quit,
// or the connection closed (a session's context is its connection's).
func (s *Server) release(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		s.mu.Lock()
		unsubscribe := s.subscriptions[sess]
		delete(s.subscriptions, sess)
		s.mu.Unlock()
		if unsubscribe != nil {
			unsubscribe()
		}
		next(sess)
	}
}

// logSessions logs each session's start and end, and its role.
func (s *Server) logSessions(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		k, _ := s.role(sess)
		start := time.Now()
		s.log.Info("session", "user", sess.User(), "key", k.Name(), "role", k.Role.String(), "remote", sess.RemoteAddr().String())
		next(sess)
		s.log.Info("session ended", "user", sess.User(), "key", k.Name(), "duration", time.Since(start).Round(time.Second))
	}
}

// Serve serves SSH on ln until Shutdown or Close. While it serves, the authorized keys
// file is watched, and connections whose key it no longer lets in are ended.
func (s *Server) Serve(ln net.Listener) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.watchKeys(ctx)
	err := s.srv.Serve(ln)
	if errors.Is(err, ssh.ErrServerClosed) {
		return nil
	}
	return err
}

// watchKeys looks at the authorized keys file every KeysPollInterval and, after each
// change, ends the connections whose key is no longer in it or whose role changed.
func (s *Server) watchKeys(ctx context.Context) {
	t := time.NewTicker(s.opts.KeysPollInterval)
	defer t.Stop()
	seen := s.keys.refresh()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A login may have read the change first; the generation still tells.
		if g := s.keys.refresh(); g != seen {
			seen = g
			s.revoke()
		}
	}
}

// revoke ends every connection whose proven key the file no longer lets in, and every
// session running with a role its key no longer has.
func (s *Server) revoke() {
	s.mu.Lock()
	conns := make([]*connection, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		// Set once the handshake has proven the key; nil before.
		key, _ := c.ctx.Value(ssh.ContextKeyPublicKey).(ssh.PublicKey)
		if key == nil {
			continue
		}
		k, ok := s.keys.current(key)
		if !ok {
			c.end("your key is no longer authorized")
			continue
		}
		c.mu.Lock()
		changed := false
		for sess := range c.sessions {
			changed = changed || sess.key.Role != k.Role
		}
		c.mu.Unlock()
		if changed {
			c.end("your key's role is now " + k.Role.String() + "; connect again")
		}
	}
}

// Shutdown stops accepting connections and waits for the sessions to end, or ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes the listeners and every connection at once.
func (s *Server) Close() error { return s.srv.Close() }

func fingerprint(k ssh.PublicKey) string {
	if k == nil {
		return ""
	}
	return gossh.FingerprintSHA256(k)
}

// printf adapts slog to the recover middleware's logger.
type printf struct{ log *slog.Logger }

func (p printf) Printf(format string, v ...any) { p.log.Error(fmt.Sprintf(format, v...)) }
