package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller/configserver"
	"github.com/mcotui/mcotui/core/firstboot"
)

// ConfigServerOptions are `mcotui config-server`'s.
type ConfigServerOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Addr is where the TLS server listens (--addr).
	Addr string
	// CertFile and KeyFile are the serving certificate and key (PEM); TokenFile holds
	// the bootstrap token.
	CertFile, KeyFile, TokenFile string
	// MetricsAddr and HealthAddr are --metrics-addr and --health-addr; "" serves none.
	MetricsAddr, HealthAddr string
	Verbose                 bool
	LogFormat               cmdutil.LogFormat
	Version                 string
	routeKlog               bool
	// ready is told the address the server listens on, for tests (nil: no one).
	ready func(addr string)
}

// NewCmdConfigServer is `mcotui config-server`; runF, when not nil, replaces the run step.
func NewCmdConfigServer(f *cmdutil.Factory, runF func(*ConfigServerOptions) error) *cobra.Command {
	o := &ConfigServerOptions{IOStreams: f.IOStreams, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "config-server --tls-cert-file FILE --tls-key-file FILE --token-file FILE",
		Short: "Serve each pool's rendered config to new machines at first boot (as MCO's Machine Config Server)",
		Long: `config-server serves each MachineConfigPool's rendered config to machines at their
first boot, as the Machine Config Operator's Machine Config Server does, on port 22623:

  GET /config/<pool>   the pool's rendered config as Ignition, in the spec version the
                       Accept header asks for (3.0 to 3.5; 2.2 for boot images whose
                       Ignition predates spec 3, and for a client that names none),
                       with /etc/machine-config-daemon/node-annotations.json (the
                       rendered config's name, state Done) and the encapsulated
                       MachineConfig (/etc/ignition-machine-config-encapsulated.json)
                       appended, so that the agent starts the node Done, with no drain
                       and no reboot.

Unlike MCO's server, which trusts the network, every request must carry the bootstrap
token (the Authorization header, "Bearer <token>"): without it the answer is 403. An
unknown pool gets 404. A pool in the middle of a rollout hands out its target only once
its rollout would hand it to a node (not paused, inside its maintenance windows, not
held by a gate, and taken by one node already); until then a new machine gets the
config the pool's nodes run, and is updated with them.

mcotui install deploys it behind the Service mcotui-config-server, with its CA,
serving certificate and token in Secrets; mcotui bootimages stub POOL prints the
Ignition stub that points a machine's user data at it. Every request is logged; with
--metrics-addr, mcotui_configserver_requests_total and
mcotui_configserver_request_duration_seconds are served.`,
		Example: `  # In the cluster (what mcotui install deploys)
  mcotui config-server --tls-cert-file /etc/mcotui/tls/tls.crt --tls-key-file /etc/mcotui/tls/tls.key \
    --token-file /etc/mcotui/token/token --metrics-addr :8080 --health-addr :8081`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			o.routeKlog = runF == nil
			return cmdutil.RunE(o, runF)(c, args)
		},
	}
	fl := cmd.Flags()
	o.Kube.Add(fl, f)
	fl.StringVar(&o.Addr, "addr", fmt.Sprintf(":%d", firstboot.Port), "serve first-boot configs over TLS at ADDR")
	fl.StringVar(&o.CertFile, "tls-cert-file", "", "the serving certificate (PEM), with its chain; reread when it changes")
	fl.StringVar(&o.KeyFile, "tls-key-file", "", "the serving certificate's private key (PEM)")
	fl.StringVar(&o.TokenFile, "token-file", "", "the file holding the bootstrap token requests must carry")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", "", `serve Prometheus metrics at http://ADDR/metrics (default "": off)`)
	fl.StringVar(&o.HealthAddr, "health-addr", "", `serve /healthz and /readyz (ready once the caches synced) at ADDR (default "": off)`)
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "log at debug level")
	cmdutil.AddLogFormat(fl, &o.LogFormat)
	return cmd
}

// Complete does nothing: every option is a flag.
func (o *ConfigServerOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks that the TLS and token files are named.
func (o *ConfigServerOptions) Validate() error {
	var missing []string
	for _, f := range []struct{ flag, v string }{{"--tls-cert-file", o.CertFile}, {"--tls-key-file", o.KeyFile}, {"--token-file", o.TokenFile}} {
		if f.v == "" {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return cmdutil.UsageHelp(fmt.Errorf("%s required: the server serves only over TLS, and only to requests with the bootstrap token", strings.Join(missing, ", ")))
	}
	return nil
}

// Run serves until SIGTERM or SIGINT.
func (o *ConfigServerOptions) Run(ctx context.Context) error {
	tokenData, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return fmt.Errorf("--token-file: %w", err)
	}
	certs, err := newCertReloader(o.CertFile, o.KeyFile)
	if err != nil {
		return err
	}
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	log, restoreKlog := componentLogger(o.IOStreams.ErrOut, o.LogFormat, o.Verbose, o.routeKlog, "config-server")
	defer restoreKlog()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reg := cmdutil.NewRegistry()
	srv, err := configserver.New(configserver.Config{Clients: clients, Token: strings.TrimSpace(string(tokenData)), Registerer: reg, Log: log})
	if err != nil {
		return fmt.Errorf("--token-file %s: %w", o.TokenFile, err)
	}
	stopOps, err := cmdutil.ServeOps(o.MetricsAddr, o.HealthAddr, reg, srv.Ready, log)
	if err != nil {
		return err
	}
	defer stopOps()
	log.Info("config server starting", "version", o.Version)
	if err := srv.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return cmdutil.UsageErr(fmt.Errorf("--addr %s: %w", o.Addr, err))
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get},
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	log.Info("serving first-boot configs", "addr", ln.Addr().String())
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("config server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// certReloader serves the certificate in its files, and reads them again when either
// changes: a Secret's mounted files are replaced when the Secret is updated, and a
// renewed certificate must be served without a restart.
type certReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	stamp             string
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := c.get(nil); err != nil {
		return nil, err
	}
	return c, nil
}

// get is tls.Config.GetCertificate.
func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp, err := c.stampNow()
	if err != nil {
		return nil, err
	}
	if c.cert != nil && stamp == c.stamp {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil // half-replaced files: keep serving the last good pair
		}
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.stamp = &cert, stamp
	return c.cert, nil
}

func (c *certReloader) stampNow() (string, error) {
	var parts []string
	for _, f := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && c.cert != nil {
				return c.stamp, nil
			}
			return "", fmt.Errorf("TLS file %s: %w", f, err)
		}
		parts = append(parts, fmt.Sprintf("%d/%d", st.ModTime().UnixNano(), st.Size()))
	}
	return strings.Join(parts, " "), nil
}
