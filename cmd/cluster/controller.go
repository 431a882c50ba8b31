package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/rollout"
)

// ControllerOptions are `mcotui controller`'s.
type ControllerOptions struct {
	IOStreams cmdutil.IOStreams
	// Kube carries --kube-api-qps and --kube-api-burst too.
	Kube                cmdutil.KubeFlags
	Namespace, Identity string
	// PlatformFlag is --platform as given; Complete reads it into Platform.
	PlatformFlag                              string
	Platform                                  configv1.PlatformType
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Prometheus                                cmdutil.PrometheusFlag
	// Notify are the notification and silence flags.
	Notify  notifyFlags
	Verbose bool
	// KubeletBaseFlag is --kubelet-base-configmap as given (NAMESPACE/NAME[:KEY]);
	// Complete reads it and --kubelet-config-path into KubeletBase.
	KubeletBaseFlag, KubeletConfigPath string
	KubeletBase                        controller.KubeletBase
	LogFormat                          cmdutil.LogFormat
	// MetricsAddr and HealthAddr are --metrics-addr and --health-addr; "" serves none.
	MetricsAddr, HealthAddr string
	// Version is the binary's, logged and written by the controller.
	Version string
	// StageParallel is --stage-parallelism.
	StageParallel int
	// routeKlog sends client-go's klog output through the controller's logger.
	routeKlog bool
}

// NewCmdController is `mcotui controller`; runF, when not nil, replaces the run step.
func NewCmdController(f *cmdutil.Factory, runF func(*ControllerOptions) error) *cobra.Command {
	o := &ControllerOptions{IOStreams: f.IOStreams, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the cluster-side controller: render pools, roll configs out to nodes, manage boot images",
		Long: `controller runs mcotui's control loops on a cluster without the Machine Config
Operator, doing what MCO's render, node, boot image, kubelet-config and
container-runtime-config controllers do:

  render      renders each MachineConfigPool's MachineConfigs into its rendered
              MachineConfig (rendered-<pool>-<hash>), created once and never changed, and
              points the pool's spec.configuration at it; RenderDegraded says why a pool
              cannot be rendered.
  rollout     gives each pool's nodes the rendered config, at most maxUnavailable nodes
              unavailable at once, by zone then age, nothing while the pool is paused;
              keeps a MachineConfigNode per node and writes the pool's status, so that
              ` + "`kubectl get mcp`" + ` reads as on OpenShift; follows each pool's
              rollout policy (maintenance windows, health gates, order, holds: see
              docs/controller.md), saying what holds it in RolloutHeld.
  bootimages  when the cluster serves Machine API MachineSets: points the MachineSets
              that MachineConfiguration/cluster enrolls (modes All, None, Partial) at the
              boot images of the coreos-bootimages ConfigMap and upgrades their Ignition
              stubs to spec 3.
  generate    makes MCO's 99-<pool>-generated-kubelet and
              99-<pool>-generated-containerruntime MachineConfigs from KubeletConfigs
              (merged onto the base kubelet configuration of --kubelet-base-configmap,
              written to --kubelet-config-path) and ContainerRuntimeConfigs (CRI-O
              drop-ins; refused on pools whose nodes run containerd), owned by them, and
              writes their conditions.

Several replicas may run: they elect a leader on the Lease mcotui-controller in
--namespace and only the leader acts. The agent on each node (mcotui agent) applies the
configs. mcotui install prints a Deployment that runs this command.

With --metrics-addr it serves Prometheus metrics (pool machine counts, rollout progress,
targets written, workqueue depth and latency, leader status; docs/monitoring.md lists
them); with --health-addr, /healthz and /readyz for the kubelet's probes.

It refuses to start where the Machine Config Operator runs, and says what it found.`,
		Example: `  # In the cluster (what mcotui install deploys)
  mcotui controller --namespace mcotui --metrics-addr :8080 --health-addr :8081 --log-format json

  # From a workstation against a test cluster
  mcotui controller --kubeconfig ~/.kube/kind --namespace default -v`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			// klog's logger is the process's: only the command main runs takes it, not
			// a test's run step (nor o.Run called by a test beside other clients).
			o.routeKlog = runF == nil
			return cmdutil.RunE(o, runF)(c, args)
		},
	}
	fl := cmd.Flags()
	o.Kube.Add(fl, f)
	fl.StringVar(&o.Namespace, "namespace", install.Namespace, "the namespace of the leader election Lease")
	fl.StringVar(&o.Identity, "identity", "", "this replica's name in the Lease and in managedFields (default: host name and process id)")
	fl.StringVar(&o.PlatformFlag, "platform", "", "the infrastructure platform whose default boot image mode applies when MachineConfiguration/cluster sets none: AWS, GCP or None (default: the platform the MachineSets name)")
	fl.DurationVar(&o.LeaseDuration, "lease-duration", controller.DefaultLeaseDuration, "how long a leader's lease lasts without renewal")
	fl.DurationVar(&o.RenewDeadline, "renew-deadline", controller.DefaultRenewDeadline, "how long the leader keeps trying to renew before it gives up leading")
	fl.DurationVar(&o.RetryPeriod, "retry-period", controller.DefaultRetryPeriod, "how often candidates try to take the lease")
	fl.Float32Var(&o.Kube.QPS, "kube-api-qps", controller.DefaultQPS, "requests per second the controller may send the API server, on average (as kube-controller-manager's flag); negative for no client-side limit, leaving the pace to the API server's priority and fairness; 0 for client-go's default (5, bursts of 10)")
	fl.IntVar(&o.Kube.Burst, "kube-api-burst", controller.DefaultBurst, "requests the controller may send the API server in a burst above a positive --kube-api-qps")
	fl.StringVar(&o.KubeletBaseFlag, "kubelet-base-configmap", generated.DefaultKubeletBaseNamespace+"/"+generated.DefaultKubeletBaseName+":"+generated.DefaultKubeletBaseKey,
		"NAMESPACE/NAME[:KEY] of the ConfigMap holding the base kubelet configuration that KubeletConfigs are merged onto (kubeadm's by default)")
	fl.StringVar(&o.KubeletConfigPath, "kubelet-config-path", generated.DefaultKubeletConfigPath, "the file the nodes' kubelet reads its configuration from, where a KubeletConfig's merged configuration is written (kubeadm's by default)")
	o.Prometheus.Add(fl)
	fl.IntVar(&o.StageParallel, "stage-parallelism", rollout.DefaultStageParallel, "how many nodes of a pool download and stage a new OS image at once, before their drain, where the pool's "+rollout.StageParallelKey+" annotation does not say (control-plane pools: one)")
	o.Notify.Add(fl)
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "log at debug level")
	cmdutil.AddLogFormat(fl, &o.LogFormat)
	fl.StringVar(&o.MetricsAddr, "metrics-addr", "", `serve Prometheus metrics at http://ADDR/metrics (default "": off; :8080 for every interface, as mcotui install sets)`)
	fl.StringVar(&o.HealthAddr, "health-addr", "", `serve /healthz (the process answers) and /readyz (a standby, or the leader once its caches synced) at ADDR (default "": off; :8081 as mcotui install sets)`)
	_ = cmd.RegisterFlagCompletionFunc("platform", cobra.FixedCompletions([]string{"AWS", "GCP", "None"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads --platform into Platform; an unknown one is a usage error.
func (o *ControllerOptions) Complete(*cobra.Command, []string) error {
	switch strings.ToLower(o.PlatformFlag) {
	case "":
	case "aws":
		o.Platform = configv1.AWSPlatformType
	case "gcp":
		o.Platform = configv1.GCPPlatformType
	case "none":
		o.Platform = configv1.NonePlatformType
	default:
		return cmdutil.UsageHelp(errors.New("--platform " + o.PlatformFlag + ": use AWS, GCP or None"))
	}
	ref, key, _ := strings.Cut(o.KubeletBaseFlag, ":")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return cmdutil.UsageHelp(errors.New("--kubelet-base-configmap " + o.KubeletBaseFlag + ": use NAMESPACE/NAME or NAMESPACE/NAME:KEY"))
	}
	if !path.IsAbs(o.KubeletConfigPath) {
		return cmdutil.UsageHelp(errors.New("--kubelet-config-path " + o.KubeletConfigPath + ": give an absolute path"))
	}
	o.KubeletBase = controller.KubeletBase{Namespace: ns, Name: name, Key: key, Path: path.Clean(o.KubeletConfigPath)}
	return nil
}

// Validate checks --prometheus-url (Complete has read --platform and the kubelet
// base).
func (o *ControllerOptions) Validate() error {
	if o.StageParallel < 1 {
		return cmdutil.UsageHelp(fmt.Errorf("--stage-parallelism %d: give a whole number of nodes, at least 1", o.StageParallel))
	}
	if err := o.Prometheus.Validate(); err != nil {
		return err
	}
	return o.Notify.Validate()
}

// Run runs the controller until SIGTERM or SIGINT.
func (o *ControllerOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	alerts, err := o.Prometheus.Alerts()
	if err != nil {
		return err
	}
	log, restoreKlog := componentLogger(o.IOStreams.ErrOut, o.LogFormat, o.Verbose, o.routeKlog, "controller")
	defer restoreKlog()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("controller starting", "version", o.Version, "namespace", o.Namespace)
	reg := cmdutil.NewRegistry()
	metrics := controller.NewMetrics(reg, nil)
	// Ready as a standby too (metrics.Ready): both replicas are scraped, and one that
	// loses the Lease or fails exits, its pod restarting without a liveness probe's help.
	stopOps, err := cmdutil.ServeOps(o.MetricsAddr, o.HealthAddr, reg, metrics.Ready, log)
	if err != nil {
		return err
	}
	defer stopOps()
	phases, err := o.Notify.PhaseWatch(ctx, log, reg)
	if err != nil {
		return err
	}
	return controller.Run(ctx, controller.Config{
		PhaseWatch:    phases,
		Clients:       clients,
		Namespace:     o.Namespace,
		Identity:      o.Identity,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		Platform:      o.Platform,
		KubeletBase:   o.KubeletBase,
		Alerts:        alerts,
		Logger:        log,
		Version:       o.Version,
		Metrics:       metrics,
		StageParallel: o.StageParallel,
	})
}

// componentLogger is the logger of a long-running component (the controller, the config
// server) in --log-format, at debug level with --verbose. With routeKlog, client-go's klog
// lines go through it too, until restore is called.
func componentLogger(w io.Writer, format cmdutil.LogFormat, verbose, routeKlog bool, component string) (log *slog.Logger, restore func()) {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log = cmdutil.NewLogger(w, format, level).With("component", component)
	if routeKlog {
		return log, cmdutil.KlogTo(log)
	}
	return log, func() {}
}
