package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
	"github.com/mcotui/mcotui/store"
)

// failpointEnv arms a crash-test failpoint in the agent, like the hidden --failpoint.
const failpointEnv = "MCOTUI_FAILPOINT"

// defaultStateDir is where the agent keeps its journal, snapshots and original backups.
const defaultStateDir = "/var/lib/mcotui"

// AgentOptions are `mcotui agent`'s.
type AgentOptions struct {
	IOStreams      cmdutil.IOStreams
	node, pool     string
	root, stateDir string
	// Kube are --kubeconfig and --context, whose clients the Factory builds as every
	// command's.
	Kube                cmdutil.KubeFlags
	drainTimeout        time.Duration
	metricsAddr, bootID string
	cmdline             string
	healthAddr          string
	logFormat           cmdutil.LogFormat
	failpoint, announce string
	busAddress          string
	criEndpoint         string
	// limits bound one file's decoded contents and a config's (--max-file-size,
	// --max-config-size).
	limits ignconfig.Limits
	// version is the binary's, for the log.
	version string
}

// NewCmdAgent is `mcotui agent`; runF, when not nil, replaces the run step.
func NewCmdAgent(f *cmdutil.Factory, runF func(*AgentOptions) error) *cobra.Command {
	o := &AgentOptions{IOStreams: f.IOStreams, version: f.Version}
	c := &cobra.Command{
		Use:   "agent --node NAME",
		Short: "Apply the node's desired rendered MachineConfig and report each phase (runs on every node)",
		Long: `Run the on-host agent for one node. It watches its Node and MachineConfigNode, and when
the node's machineconfiguration.openshift.io/desiredConfig annotation names a rendered
MachineConfig other than currentConfig, it updates the node as MCO's daemon does:
prepare (refusing a change a running node cannot make), cordon and drain when the node
disruption policy says so, write files, units, the core user's SSH keys, kernel
arguments and the OS image, run the post-config actions or reboot, validate what is on
disk, uncordon and mark the node Done. Each phase is a MachineConfigNode condition with
MCO's types, reasons and messages, and the state, reason and currentConfig annotations
follow MCO's.

Every step is journaled in --state-dir before it happens, so the agent resumes after a
crash or a reboot where it stopped; 'mcotui journal' reads that journal on the host.
Between updates a drift monitor watches the managed files.

Run it as a DaemonSet pod with the host's filesystem mounted at --root (host tools then
run chrooted into it: rpm-ostree, bootc, journalctl), or as a systemd unit with --root /.
It talks to systemd and logind on the host's system bus: --bus-address, else
DBUS_SYSTEM_BUS_ADDRESS, else the host's socket under --root
(ROOT/run/dbus/system_bus_socket; /var/run/dbus/system_bus_socket with --root /). The
boot id is the kernel's (/proc, which a pod shares with the host), and the journal is
kept under --root by default, so that it survives the pod and the reboots.

It refuses to start on a cluster where the Machine Config Operator runs.`,
		Example: `  # As a systemd unit on the node
  mcotui agent --node "$(hostname)" --root / --kubeconfig /etc/mcotui/kubeconfig

  # In a DaemonSet pod (NODE_NAME from the downward API)
  mcotui agent --root /rootfs --metrics-addr :9101`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	fl := c.Flags()
	fl.StringVar(&o.node, "node", os.Getenv("NODE_NAME"), "the node this agent updates (default $NODE_NAME)")
	fl.StringVar(&o.pool, "pool", "", "the node's MachineConfigPool, for its MachineConfigNode (default: from its role labels)")
	fl.StringVar(&o.root, "root", "/", "where the host's filesystem is: / on the host, the host mount in a pod")
	fl.StringVar(&o.stateDir, "state-dir", "", "the agent's journal, snapshots and original file backups (default "+defaultStateDir+" under --root)")
	fl.StringVar(&o.busAddress, "bus-address", "", "the host's system D-Bus (default $DBUS_SYSTEM_BUS_ADDRESS, else ROOT/run/dbus/system_bus_socket)")
	fl.StringVar(&o.criEndpoint, "cri-endpoint", "", "the container runtime's CRI socket, for PinnedImageSets (default: CRI-O's "+cri.CRIOSocket+", else containerd's "+cri.ContainerdSocket+", under --root)")
	o.Kube.Add(fl, f)
	fl.DurationVar(&o.drainTimeout, "drain-timeout", agent.DefaultDrainTimeout, "after this long blocked, the drain reports NodeDegraded (and keeps trying)")
	fl.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:9101", `serve Prometheus metrics at http://ADDR/metrics ("" to disable; :9101 for every interface)`)
	fl.StringVar(&o.healthAddr, "health-addr", "", `serve /healthz (the process answers) and /readyz (the journal open and the API server reached) at ADDR (default "": off; mcotui install sets :9102)`)
	cmdutil.AddLogFormat(fl, &o.logFormat)
	o.limits = ignconfig.DefaultLimits()
	fl.Var(cmdutil.SizeFlag{N: &o.limits.File}, "max-file-size", "refuse a config with a file whose contents decode (after decompression) to more than this many bytes (a quantity: 64Mi)")
	fl.Var(cmdutil.SizeFlag{N: &o.limits.Total}, "max-config-size", "refuse a config whose files decode to more than this many bytes together")
	fl.StringVar(&o.bootID, "boot-id-file", host.BootIDPath, "the kernel's boot id, read to know that the node rebooted")
	fl.StringVar(&o.cmdline, "cmdline-file", "/proc/cmdline", "the kernel command line the node booted with, checked for the config's kernel arguments\n(the kernel's, the same under --root); empty: not checked")
	fl.StringVar(&o.failpoint, "failpoint", "", "crash tests only: SIGKILL the agent at this failpoint (also "+failpointEnv+")")
	fl.StringVar(&o.announce, "failpoint-announce", "", "power-cut tests only: at the failpoint, write a line to this file (the serial console) and wait (also "+failpointEnv+"_ANNOUNCE)")
	_ = fl.MarkHidden("failpoint")
	_ = fl.MarkHidden("failpoint-announce")
	return c
}

// Complete takes the failpoint settings from the environment when no flag gave them, and
// the bus and state directory from --root.
func (o *AgentOptions) Complete(*cobra.Command, []string) error {
	if o.failpoint == "" {
		o.failpoint = os.Getenv(failpointEnv)
	}
	if o.announce == "" {
		o.announce = os.Getenv(failpointEnv + "_ANNOUNCE")
	}
	if o.stateDir == "" {
		o.stateDir = filepath.Join(o.root, defaultStateDir)
	}
	if o.busAddress == "" {
		o.busAddress = host.SystemBusAddressUnder(o.root)
	}
	return nil
}

// Validate refuses an agent without a node, and a failpoint this build does not have.
func (o *AgentOptions) Validate() error {
	if o.node == "" {
		return cmdutil.UsageErr(errors.New("--node is required (or set NODE_NAME)"))
	}
	if err := agent.CheckFailpoint(o.failpoint); err != nil {
		return cmdutil.UsageErr(err)
	}
	return nil
}

// Run runs the agent until SIGTERM or SIGINT.
func (o *AgentOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := runAgent(ctx, o.IOStreams, o)
	// A stop asked for while the agent starts (systemd stopping the unit, the kubelet
	// ending the pod while the informers sync) ends whatever waited on the cluster with
	// the context's error. That is a clean stop, as it is once the agent runs: nothing
	// was begun that the journal does not hold, and exit 1 would read as a failure.
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(o.IOStreams.ErrOut, "agent stopped while starting: %v\n", context.Cause(ctx))
		return nil
	}
	return err
}

func runAgent(ctx context.Context, s cmdutil.IOStreams, o *AgentOptions) error {
	log := cmdutil.NewLogger(s.ErrOut, o.logFormat, slog.LevelInfo).With("component", "agent")
	defer cmdutil.KlogTo(log)()
	// First of all: a second agent on this state directory stops here, before it talks
	// to the cluster or the host. The lock lasts as long as the process.
	lock, err := agent.LockStateDir(o.stateDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	// Served from the start, so that the liveness probe answers while the agent waits
	// for the API server; readiness follows the journal and the API server.
	health := &agent.Health{}
	defer health.JournalClosed()
	stopHealth, err := cmdutil.ServeOps("", o.healthAddr, nil, health.Ready, log)
	if err != nil {
		return err
	}
	defer stopHealth()
	restCfg, err := o.Kube.RESTConfig()
	if err != nil {
		return err
	}
	clients, err := kube.NewClients(restCfg)
	if err != nil {
		return err
	}
	root, err := host.NewRoot(o.root)
	if err != nil {
		return cmdutil.UsageErr(fmt.Errorf("--root: %w", err))
	}
	cluster, err := nodeagent.NewNodeAgent(ctx, restCfg, o.node, o.pool, nodeagent.NodeAgentOptions{Logger: log})
	if err != nil {
		return err
	}
	defer cluster.Close()
	journal, err := store.Open(filepath.Join(o.stateDir, store.FileName), store.Options{Node: o.node})
	if err != nil {
		// Damaged, another node's, unwritable: the cluster is told before the agent
		// exits, or the node would look healthy while nothing updates it.
		if rerr := agent.ReportJournalError(ctx, cluster, o.node, err); rerr != nil {
			log.Error("cannot report the journal's state to the cluster", "err", rerr)
		}
		return err
	}
	health.JournalOpened()
	systemd, err := host.NewSystemd(ctx, host.WithBusAddress(o.busAddress))
	if err != nil {
		return err
	}
	defer systemd.Close()
	logind, err := host.NewLogind(ctx, host.WithBusAddress(o.busAddress))
	if err != nil {
		return err
	}
	defer logind.Close()

	reg := cmdutil.NewRegistry()
	metrics := agent.NewMetrics(reg)
	stopMetrics, err := cmdutil.ServeOps(o.metricsAddr, "", reg, nil, log)
	if err != nil {
		return err
	}
	defer stopMetrics()

	a, err := agent.New(agent.Config{
		Node: o.node, Cluster: cluster, Journal: journal,
		Root: root, Systemd: systemd, Logind: logind, OS: host.NewOSTree(o.root, nil), UnitLog: host.NewUnitLog(o.root, nil),
		StateDir: o.stateDir, BootIDFile: o.bootID, CmdlineFile: o.cmdline, DrainTimeout: o.drainTimeout, Limits: o.limits,
		MCOPresent: func(ctx context.Context) (bool, string, error) { return kube.DetectMCO(ctx, clients.Kube) },
		Metrics:    metrics, Health: health, Log: log, Failpoint: o.failpoint, FailpointAnnounce: o.announce,
	})
	if err != nil {
		return err
	}
	pinner, closePins, err := newPinner(ctx, o, cluster, root, systemd, log)
	if err != nil {
		return err
	}
	defer closePins()
	log.Info("agent starting", "node", o.node, "root", o.root, "stateDir", o.stateDir, "bus", o.busAddress, "version", o.version)
	// The pinned images are pulled beside the updates, as MCO's daemon does; the agent's
	// Run ends the process (an MCO cluster, a damaged journal), and the pinner with it.
	pinCtx, stopPins := context.WithCancel(ctx)
	pinDone := make(chan struct{})
	go func() {
		defer close(pinDone)
		_ = pinner.Run(pinCtx)
	}()
	err = a.Run(ctx)
	stopPins()
	<-pinDone
	return err
}

// newPinner connects the pinned-image work to the pools' PinnedImageSets and to the
// container runtime. A node without a runtime socket still starts: the pinner reports
// the missing runtime as soon as a pool names a set, and looks for the socket again on
// every round (at boot the agent may start before the runtime).
func newPinner(ctx context.Context, o *AgentOptions, cluster *nodeagent.NodeAgent, root *host.Root, systemd *host.Systemd, log *slog.Logger) (*agent.Pinner, func(), error) {
	pins, err := nodeagent.NewPins(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	hostRoot := strings.TrimSuffix(o.root, "/")
	var images interface {
		agent.ImageService
		Close() error
	}
	// On containerd the images are pinned through containerd's own API on the same
	// socket (the CRI is one of its services).
	var containerd cri.Pinning
	if o.criEndpoint != "" {
		client, err := cri.Dial(o.criEndpoint)
		if err != nil {
			pins.Close()
			return nil, nil, cmdutil.UsageErr(fmt.Errorf("--cri-endpoint: %w", err))
		}
		images, containerd = client, client.Pins()
		log.Info("pinned images", "criEndpoint", o.criEndpoint)
	} else {
		d := &cri.Detecting{Root: hostRoot, Found: func(endpoint string) {
			log.Info("pinned images: container runtime found", "criEndpoint", endpoint)
		}}
		images, containerd = d, d
	}
	// The images' sizes come from their registries, with the kubelet's pull secret (MCO's
	// --authfile), before anything is pulled; through the mirrors of the node's
	// registries.conf, as CRI-O pulls them.
	sizer := &cri.Manifests{AuthFile: hostRoot + kubeletAuthFile, RegistriesConf: hostRoot + cri.RegistriesConf}
	p, err := agent.NewPinner(agent.PinConfig{
		Node: o.node, Cluster: pins, Images: images, Containerd: containerd, Sizer: sizer, Root: root, Systemd: systemd, StateDir: o.stateDir, Log: log,
	})
	if err != nil {
		pins.Close()
		_ = images.Close()
		return nil, nil, err
	}
	return p, func() {
		pins.Close()
		_ = images.Close()
	}, nil
}

// kubeletAuthFile is the node's pull secret, as the kubelet and MCO read it.
const kubeletAuthFile = "/var/lib/kubelet/config.json"
