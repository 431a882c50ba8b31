package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/platform/kube"
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
	// HostKey is the host key file, generated when missing; AuthorizedKeys the keys let
	// in, each with its role.
	HostKey, AuthorizedKeys string
}

// NewCmdServe is `mcotui serve`; runF, when not nil, replaces the run step.
func NewCmdServe(f *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	o := &ServeOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "serve --authorized-keys FILE [--listen :2222] [--host-key FILE]",
		Short: "Serve the TUI over SSH, each key read-only or admin",
		Long: `serve runs an SSH server that opens mcotui's TUI in every session, on the cluster of the
kubeconfig context (--kubeconfig, --context) it runs with: on a bastion, or in the
cluster under a service account. One set of watches serves every session.

Clients authenticate with a public key, and only with one.

` + serve.AuthorizedKeysFormat + `

The host key is read from --host-key; when the file does not exist an ed25519 key is
generated and saved there (mode 0600). Keep it: a new one makes every client warn.

Actions run with serve's own Kubernetes credentials, whoever the SSH user is, and are
logged with the key's comment. Sessions need a terminal (ssh -t); NO_COLOR sent by the
client (ssh -o SetEnv=NO_COLOR=1) draws without colour.`,
		Example: `  mcotui serve --authorized-keys /etc/mcotui/authorized_keys --host-key /var/lib/mcotui/host_ed25519
  ssh -p 2222 -t bastion.example.com`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	fl := cmd.Flags()
	o.Kube.Add(fl, f.Version)
	fl.StringVar(&o.Listen, "listen", ":2222", "address to listen on")
	fl.StringVar(&o.HostKey, "host-key", "mcotui_host_ed25519", "host key file; generated (ed25519, mode 0600) when missing")
	fl.StringVar(&o.AuthorizedKeys, "authorized-keys", "", "authorized keys file, each key marked role=admin or role=read-only (required)")
	return cmd
}

// Complete has nothing to fill.
func (o *ServeOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks that keys are given: serve lets no one in without.
func (o *ServeOptions) Validate() error {
	if o.AuthorizedKeys == "" {
		return cmdutil.UsageHelp(errors.New("--authorized-keys is required: serve lets in only the keys it lists"))
	}
	return nil
}

// Run serves the TUI over SSH until SIGINT or SIGTERM.
func (o *ServeOptions) Run(ctx context.Context) error {
	log := slog.New(slog.NewTextHandler(o.IOStreams.ErrOut, nil))
	// client-go logs through klog; a server's log is its stderr, in one format.
	klog.SetLogger(logr.FromSlogHandler(log.Handler()))

	cfg, err := kube.RESTConfig(o.Kube.Kubeconfig, o.Kube.Context)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cluster, err := source.New(ctx, cfg, source.Options{Context: contextName(o.Kube.Kubeconfig, o.Kube.Context), Logger: log})
	if err != nil {
		return err
	}
	defer cluster.Close()

	srv, err := serve.New(serve.Options{
		HostKeyPath:        o.HostKey,
		AuthorizedKeysPath: o.AuthorizedKeys,
		Subscribe: func() (model.Source, func()) {
			sub := cluster.Subscribe()
			return sub, sub.Close
		},
		Actions: func(user string) action.Actions { return source.NewActions(cluster, user) },
		Logger:  log,
		TUI:     tui.Options{Coalesce: coalesce, Events: cluster},
	})
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return cmdutil.UsageErr(fmt.Errorf("--listen %s: %w", o.Listen, err))
	}
	info := cluster.Info()
	log.Info("serving the TUI over SSH", "listen", ln.Addr().String(), "context", info.Context, "cluster", info.Cluster)
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
