package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/serve"
	"github.com/mcotui/mcotui/tui/source"
)

// ServeOptions are `mcotui serve`'s.
type ServeOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Listen is the SSH server's address.
	Listen string
	// HostKey is the host key file, generated when missing (empty: Complete puts it
	// in the user's state directory, serve.DefaultHostKeyPath); AuthorizedKeys the
	// keys let in, each with its role.
	HostKey, AuthorizedKeys string
	// Limits bound what clients can hold.
	Limits serve.Limits
	// PodReads is --pod-reads: which sessions read pods and their logs.
	PodReads string
	// Getenv reads the environment, for the default host key path.
	Getenv func(string) string
}

// NewCmdServe is `mcotui serve`; runF, when not nil, replaces the run step.
func NewCmdServe(f *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	o := &ServeOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "serve --authorized-keys FILE [--listen 127.0.0.1:2222] [--host-key FILE]",
		Short: "Serve the TUI over SSH, each key read-only or admin",
		Long: `serve runs an SSH server that opens mcotui's TUI in every session, on the cluster of the
kubeconfig context (--kubeconfig, --context) it runs with: on a bastion, or in the
cluster under a service account. One set of watches serves every session.

Clients authenticate with a public key, and only with one.

` + serve.AuthorizedKeysFormat + `

The host key is read from --host-key, by default $XDG_STATE_HOME/mcotui/host_ed25519
(~/.local/state/mcotui/host_ed25519); when the file does not exist an ed25519 key is
generated and saved there (mode 0600). Keep it: a new one makes every client warn. Like
the authorized keys file, it is refused when group- or world-writable or owned by another
user than serve's (or root).

serve listens on 127.0.0.1 unless --listen says otherwise (--listen :2222 for every
interface). Clients are held to limits: window sizes are clamped to --max-window, at most
--max-sessions sessions run at once, one address holds at most --max-conns-per-addr
connections (counted before the handshake), a connection must authenticate within
--handshake-timeout, and is closed after --idle-timeout without input from the client or
--max-session-time after it opened, the session told why.

Actions run with serve's own Kubernetes credentials, whoever the SSH user is, and are
logged with the key's comment. So would reads of pods, their logs and their
PodDisruptionBudgets (l, o, B, :pods): sessions make none unless --pod-reads says which
may (admin: role=admin keys; all), and serve then checks at start that its identity may
get and list pods, get pods/log and get poddisruptionbudgets in every namespace. Sessions need a terminal (ssh -t); NO_COLOR sent by the
client (ssh -o SetEnv=NO_COLOR=1) draws without colour.`,
		Example: `  mcotui serve --authorized-keys /etc/mcotui/authorized_keys --host-key /var/lib/mcotui/host_ed25519
  ssh -p 2222 -t bastion.example.com`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	fl := cmd.Flags()
	o.Kube.Add(fl, f)
	fl.StringVar(&o.Listen, "listen", "127.0.0.1:2222", "address to listen on (:2222 for every interface)")
	fl.StringVar(&o.HostKey, "host-key", "", "host key file; generated (ed25519, mode 0600) when missing (default $XDG_STATE_HOME/mcotui/host_ed25519)")
	d := serve.DefaultLimits()
	o.Limits.MaxWidth, o.Limits.MaxHeight = d.MaxWidth, d.MaxHeight
	// Not flags: serve's defaults (the memory budget across sessions, the cap on
	// connections not yet authenticated).
	o.Limits.MaxCells, o.Limits.MaxUnauthenticated = d.MaxCells, d.MaxUnauthenticated
	fl.Var(&windowFlag{&o.Limits.MaxWidth, &o.Limits.MaxHeight}, "max-window", "largest window a client gets, WIDTHxHEIGHT; larger requests are clamped")
	fl.IntVar(&o.Limits.MaxSessions, "max-sessions", d.MaxSessions, "most sessions at once, over all clients")
	fl.IntVar(&o.Limits.MaxConnsPerAddr, "max-conns-per-addr", d.MaxConnsPerAddr, "most connections one remote address holds at once")
	fl.DurationVar(&o.Limits.HandshakeTimeout, "handshake-timeout", d.HandshakeTimeout, "close a connection not authenticated by then")
	fl.DurationVar(&o.Limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a connection after this long without input from the client")
	fl.DurationVar(&o.Limits.WatchTimeout, "watch-timeout", d.WatchTimeout, "close a connection without input after this long even while its screen changes (someone watching a rollout); never sooner than --idle-timeout")
	fl.DurationVar(&o.Limits.MaxSessionTime, "max-session-time", d.MaxSessionTime, "close a connection this long after it opened")
	fl.StringVar(&o.AuthorizedKeys, "authorized-keys", "", "authorized keys file, each key marked role=admin or role=read-only (required)")
	fl.StringVar(&o.PodReads, "pod-reads", string(serve.PodReadsNone), "which sessions read pods, their logs, budgets and the rollout preview's drain forecast with serve's credentials: none, admin (role=admin keys) or all")
	return cmd
}

// Complete puts the host key in the user's state directory unless --host-key says.
func (o *ServeOptions) Complete(*cobra.Command, []string) error {
	if o.HostKey != "" {
		return nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := serve.DefaultHostKeyPath(getenv)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	o.HostKey = p
	return nil
}

// Validate checks that keys are given (serve lets no one in without) and that every
// limit is one: serve offers no unlimited mode.
func (o *ServeOptions) Validate() error {
	if o.AuthorizedKeys == "" {
		return cmdutil.UsageHelp(errors.New("--authorized-keys is required: serve lets in only the keys it lists"))
	}
	if _, err := serve.ParsePodReads(o.PodReads); err != nil {
		return cmdutil.UsageHelp(err)
	}
	l := o.Limits
	for _, c := range []struct {
		flag string
		ok   bool
	}{
		{"--max-sessions", l.MaxSessions > 0},
		{"--max-conns-per-addr", l.MaxConnsPerAddr > 0},
		{"--handshake-timeout", l.HandshakeTimeout > 0},
		{"--idle-timeout", l.IdleTimeout > 0},
		{"--watch-timeout", l.WatchTimeout > 0},
		{"--max-session-time", l.MaxSessionTime > 0},
	} {
		if !c.ok {
			return cmdutil.UsageHelp(fmt.Errorf("%s must be positive: a hostile client would hold an unlimited server", c.flag))
		}
	}
	return nil
}

// windowFlag is --max-window, WIDTHxHEIGHT.
type windowFlag struct{ w, h *int }

func (f *windowFlag) String() string {
	if f.w == nil {
		return ""
	}
	return fmt.Sprintf("%dx%d", *f.w, *f.h)
}

func (f *windowFlag) Set(v string) error {
	ws, hs, ok := strings.Cut(v, "x")
	w, werr := strconv.Atoi(ws)
	h, herr := strconv.Atoi(hs)
	if !ok || werr != nil || herr != nil || w < 20 || h < 5 {
		return fmt.Errorf("%q: want WIDTHxHEIGHT, at least 20x5", v)
	}
	*f.w, *f.h = w, h
	return nil
}

func (f *windowFlag) Type() string { return "WxH" }

// Run serves the TUI over SSH until SIGINT or SIGTERM.
func (o *ServeOptions) Run(ctx context.Context) error {
	log := slog.New(slog.NewTextHandler(o.IOStreams.ErrOut, nil))
	// client-go logs through klog; a server's log is its stderr, in one format.
	klog.SetLogger(logr.FromSlogHandler(log.Handler()))

	cfg, err := o.Kube.RESTConfig()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	podReads, err := serve.ParsePodReads(o.PodReads)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	if podReads != serve.PodReadsNone {
		kc, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if err := serve.CheckPodReads(ctx, kc); err != nil {
			return err
		}
	}
	cluster, err := source.New(ctx, cfg, source.Options{Context: contextName(o.Kube.Kubeconfig, o.Kube.Context), Logger: log})
	if err != nil {
		return err
	}
	go trimMemory(ctx, time.Second)
	defer cluster.Close()

	srv, err := serve.New(serve.Options{
		HostKeyPath:        o.HostKey,
		AuthorizedKeysPath: o.AuthorizedKeys,
		Subscribe: func() (model.Source, func()) {
			sub := cluster.Subscribe()
			return sub, sub.Close
		},
		Actions:       func(user string) action.Actions { return source.NewActions(cluster, user) },
		Logger:        log,
		TUI:           tui.Options{Coalesce: coalesce, CoalesceListing: coalesceListing, Events: cluster},
		Pods:          cluster,
		PodReads:      podReads,
		DrainForecast: cluster,
		Limits:        o.Limits,
	})
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return cmdutil.UsageErr(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	info := cluster.Info()
	log.Info("serving the TUI over SSH", "listen", ln.Addr().String(), "context", info.Context, "cluster", info.Cluster, "host-key", o.HostKey, "pod-reads", string(podReads))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down; open sessions get 10s to end")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return nil
}
