// Package serve serves the TUI over SSH with charm.land/wish/v2: one Bubble Tea program
// per session, each with its own styles and colour profile (Lip Gloss v2 has no global
// renderer), all fed from one set of informers shared through subscriptions.
//
// Authentication is by public key only, against an authorized keys file that marks each
// key admin or read-only (AuthorizedKeysFormat). The role is decided in the session
// from the key the client proved it holds (ssh.Session.PublicKey), never from the
// authentication callback, which also sees keys a client only offers
// (CVE-2024-45337).
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/activeterm"
	bm "charm.land/wish/v2/bubbletea"
	"charm.land/wish/v2/recover"
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
	// server sets the source, the actions and read-only mode.
	TUI tui.Options
}

// Server is the SSH server.
type Server struct {
	opts Options
	log  *slog.Logger
	keys *keyring
	srv  *ssh.Server

	mu            sync.Mutex
	subscriptions map[ssh.Session]func() // each session's, until its program ends
}

// New returns a server with its host key and authorized keys loaded.
func New(opts Options) (*Server, error) {
	if opts.Subscribe == nil {
		return nil, errors.New("serve: no source to subscribe to")
	}
	s := &Server{opts: opts, log: opts.Logger, subscriptions: map[ssh.Session]func(){}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	keys, err := newKeyring(opts.AuthorizedKeysPath, func(err error) {
		s.log.Error("authorized keys not reloaded; the previous ones stay in force", "err", err)
	})
	if err != nil {
		return nil, err
	}
	s.keys = keys
	signer, err := HostKey(opts.HostKeyPath, func(w string) { s.log.Warn(w) })
	if err != nil {
		return nil, err
	}
	// Middlewares run last-listed first: recover guards everything, the log sees every
	// session, activeterm turns away sessions without a terminal, then the program, and
	// once it ends, the session's subscription is released.
	srv, err := wish.NewServer(
		wish.WithPublicKeyAuth(s.authenticate),
		wish.WithMiddleware(
			s.release,
			bm.MiddlewareWithProgramHandler(s.program),
			activeterm.Middleware(),
			s.logSessions,
			recover.MiddlewareWithLogger(printf{s.log}),
		),
	)
	if err != nil {
		return nil, err
	}
	srv.AddHostKey(signer)
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
// actions only for an admin key.
func (s *Server) program(sess ssh.Session) *tea.Program {
	k, ok := s.role(sess)
	if !ok {
		// The key was removed from the file since authentication, or the session
		// has no proven key at all: no program.
		wish.Fatalln(sess, "mcotui: your key is not (or no longer) authorized")
		return nil
	}
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
	// NO_COLOR from the client (ssh -o SetEnv=NO_COLOR=1) counts like a local one.
	if slices.ContainsFunc(sess.Environ(), func(e string) bool { return strings.HasPrefix(e, "NO_COLOR=") && e != "NO_COLOR=" }) {
		opts.NoColor = true
	}
	return tea.NewProgram(tui.New(src, opts), append(bm.MakeOptions(sess), tea.WithContext(sess.Context()))...)
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

// Serve serves SSH on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, ssh.ErrServerClosed) {
		return nil
	}
	return err
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
