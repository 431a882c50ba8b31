package cluster

import (
	"errors"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
)

type controllerOptions struct {
	kf                                        cmdutil.KubeFlags
	namespace, identity, platform             string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	verbose                                   bool
}

func NewCmdController(f *cmdutil.Factory) *cobra.Command {
	s := f.IOStreams
	o := controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the cluster-side controller: render pools, roll configs out to nodes, manage boot images",
		Long: `controller runs mcotui's three control loops on a cluster without the Machine Config
Operator, doing what MCO's render, node and boot image controllers do:

  render      renders each MachineConfigPool's MachineConfigs into its rendered
              MachineConfig (rendered-<pool>-<hash>), created once and never changed, and
              points the pool's spec.configuration at it; RenderDegraded says why a pool
              cannot be rendered.
  rollout     gives each pool's nodes the rendered config, at most maxUnavailable nodes
              unavailable at once, by zone then age, nothing while the pool is paused;
              keeps a MachineConfigNode per node and writes the pool's status, so that
              ` + "`kubectl get mcp`" + ` reads as on OpenShift.
  bootimages  when the cluster serves Machine API MachineSets: points the MachineSets
              that MachineConfiguration/cluster enrolls (modes All, None, Partial) at the
              boot images of the coreos-bootimages ConfigMap and upgrades their Ignition
              stubs to spec 3.

Several replicas may run: they elect a leader on the Lease mcotui-controller in
--namespace and only the leader acts. The agent on each node (mcotui agent) applies the
configs. mcotui install prints a Deployment that runs this command.

It refuses to start where the Machine Config Operator runs, and says what it found.`,
		Example: `  # In the cluster (what mcotui install deploys)
  mcotui controller --namespace mcotui

  # From a workstation against a test cluster
  mcotui controller --kubeconfig ~/.kube/kind --namespace default -v`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			var platform configv1.PlatformType
			switch strings.ToLower(o.platform) {
			case "":
			case "aws":
				platform = configv1.AWSPlatformType
			case "gcp":
				platform = configv1.GCPPlatformType
			case "none":
				platform = configv1.NonePlatformType
			default:
				return cmdutil.UsageHelp(errors.New("--platform " + o.platform + ": use AWS, GCP or None"))
			}
			clients, err := o.kf.Clients()
			if err != nil {
				return err
			}
			level := slog.LevelInfo
			if o.verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(s.ErrOut, &slog.HandlerOptions{Level: level})).With("component", "controller")
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			log.Info("controller starting", "version", f.Version, "namespace", o.namespace)
			return controller.Run(ctx, controller.Config{
				Clients:       clients,
				Namespace:     o.namespace,
				Identity:      o.identity,
				LeaseDuration: o.leaseDuration,
				RenewDeadline: o.renewDeadline,
				RetryPeriod:   o.retryPeriod,
				Platform:      platform,
				Logger:        log,
				Version:       f.Version,
			})
		},
	}
	fl := cmd.Flags()
	o.kf.Add(fl, f.Version)
	fl.StringVar(&o.namespace, "namespace", controller.DefaultNamespace, "the namespace of the leader election Lease")
	fl.StringVar(&o.identity, "identity", "", "this replica's name in the Lease and in managedFields (default: host name and process id)")
	fl.StringVar(&o.platform, "platform", "", "the infrastructure platform whose default boot image mode applies when MachineConfiguration/cluster sets none: AWS, GCP or None (default: the platform the MachineSets name)")
	fl.DurationVar(&o.leaseDuration, "lease-duration", controller.DefaultLeaseDuration, "how long a leader's lease lasts without renewal")
	fl.DurationVar(&o.renewDeadline, "renew-deadline", controller.DefaultRenewDeadline, "how long the leader keeps trying to renew before it gives up leading")
	fl.DurationVar(&o.retryPeriod, "retry-period", controller.DefaultRetryPeriod, "how often candidates try to take the lease")
	fl.Float32Var(&o.kf.QPS, "kube-api-qps", controller.DefaultQPS, "requests per second the controller may send the API server, on average (as kube-controller-manager's flag)")
	fl.IntVar(&o.kf.Burst, "kube-api-burst", controller.DefaultBurst, "requests the controller may send the API server in a burst above --kube-api-qps")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "log at debug level")
	_ = cmd.RegisterFlagCompletionFunc("platform", cobra.FixedCompletions([]string{"AWS", "GCP", "None"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
