package cluster

import (
	"context"
	"fmt"

	"github.com/coreos/go-semver/semver"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/deploy"
)

// StubOptions are `mcotui bootimages stub`'s.
type StubOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	Pool      string
	// Namespace holds the config server's Secrets; Server overrides the URL they name.
	Namespace, Server string
	// VersionFlag is --ignition-version as given; Complete reads it into Version.
	VersionFlag string
	Version     semver.Version
}

// NewCmdBootImagesStub is `mcotui bootimages stub`; runF, when not nil, replaces the run
// step.
func NewCmdBootImagesStub(f *cmdutil.Factory, runF func(*StubOptions) error) *cobra.Command {
	o := &StubOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "stub POOL [--server URL]",
		Short: "Print the Ignition stub that makes a new machine join POOL with its config",
		Long: `stub prints the Ignition config a new machine's user data carries so that its first
boot takes POOL's rendered config from mcotui's config server (mcotui install
--config-server), as MCO's stubs point at the Machine Config Server:

  ignition.config.merge                  https://SERVER/config/POOL, with the bootstrap
                                         token in its Authorization header (httpHeaders)
  ignition.security.tls.certificateAuthorities
                                         the config server's CA

The CA, the token and the URL are read from the Secrets install made in --namespace
(the URL is the first --config-server-name given to install; --server overrides it).
The stub is Ignition spec 3.1 by default, the oldest with httpHeaders; the machine's
Ignition then asks the server for its own newest spec. The stub holds the token:
treat it as a secret.`,
		Example: `  # User data for a worker
  mcotui bootimages stub worker > worker.ign

  # Through a load balancer's name
  mcotui bootimages stub worker --server https://config.example.com:22623`,
		Args: cmdutil.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return o.Kube.CompletePools(c, args, prefix)
		},
		RunE: cmdutil.RunE(o, runF),
	}
	o.Kube.Add(cmd.Flags(), f)
	cmd.Flags().StringVar(&o.Namespace, "namespace", install.Namespace, "the namespace mcotui is installed in, which holds the config server's Secrets")
	cmd.Flags().StringVar(&o.Server, "server", "", "the config server's URL as new machines reach it, https://HOST[:PORT] (default: the URL install recorded)")
	cmd.Flags().StringVar(&o.VersionFlag, "ignition-version", firstboot.StubVersion.String(), "the stub's Ignition spec version, 3.1.0 or later")
	return cmd
}

// Complete takes the pool and reads --ignition-version.
func (o *StubOptions) Complete(_ *cobra.Command, args []string) error {
	o.Pool = args[0]
	v, err := semver.NewVersion(o.VersionFlag)
	if err != nil || v.Major != 3 || v.LessThan(firstboot.StubVersion) || v.Minor > firstboot.Versions[0].Minor {
		return cmdutil.UsageHelp(fmt.Errorf("--ignition-version %q: use 3.1.0 to %s", o.VersionFlag, firstboot.Versions[0]))
	}
	o.Version = *v
	return nil
}

// Validate has nothing left to check.
func (o *StubOptions) Validate() error { return nil }

// Run reads the config server's Secrets and prints the stub.
func (o *StubOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	if _, err := clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, o.Pool, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no MachineConfigPool %s: a machine pointed at it would get 404 from the config server", o.Pool)
		}
		return fmt.Errorf("get MachineConfigPool %s: %w", o.Pool, err)
	}
	secrets := clients.Kube.CoreV1().Secrets(o.Namespace)
	notInstalled := func(name string, err error) error {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no Secret %s/%s: install the config server first (mcotui install --config-server | kubectl apply -f -)", o.Namespace, name)
		}
		return fmt.Errorf("get Secret %s/%s: %w", o.Namespace, name, err)
	}
	tlsSecret, err := secrets.Get(ctx, deploy.ConfigServerTLSSecret, metav1.GetOptions{})
	if err != nil {
		return notInstalled(deploy.ConfigServerTLSSecret, err)
	}
	tokenSecret, err := secrets.Get(ctx, deploy.ConfigServerTokenSecret, metav1.GetOptions{})
	if err != nil {
		return notInstalled(deploy.ConfigServerTokenSecret, err)
	}
	server := o.Server
	if server == "" {
		server = tlsSecret.Annotations[deploy.ConfigServerURLAnnotation]
	}
	if server == "" {
		return fmt.Errorf("secret %s/%s names no URL (annotation %s): give --server https://HOST:%d", o.Namespace, deploy.ConfigServerTLSSecret, deploy.ConfigServerURLAnnotation, firstboot.Port)
	}
	stub, err := firstboot.Stub(server, o.Pool, tlsSecret.Data[deploy.ConfigServerCAKey], string(tokenSecret.Data[deploy.ConfigServerTokenKey]), o.Version)
	if err != nil {
		return fmt.Errorf("secrets %s/%s and %s: %w", o.Namespace, deploy.ConfigServerTLSSecret, deploy.ConfigServerTokenSecret, err)
	}
	_, err = fmt.Fprintf(o.IOStreams.Out, "%s\n", stub)
	return err
}
