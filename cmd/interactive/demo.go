package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/charmbracelet/x/term"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/sim/apisim"
	"github.com/mcotui/mcotui/sim/demo"
)

// demoContext names the simulated cluster in the TUI's status line.
const demoContext = "demo (simulated)"

// DemoOptions are `mcotui demo`'s.
type DemoOptions struct {
	IOStreams cmdutil.IOStreams
	// Sim is the simulation's size, pace and seed.
	Sim demo.Options
	// LogFile, when set, is where the log of the controller, agents and TUI goes.
	LogFile string
}

// NewCmdDemo is `mcotui demo`; runF, when not nil, replaces the run step.
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	o := &DemoOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "demo [--nodes N] [--speed X] [--seed N]",
		Short: "The TUI on a simulated cluster inside this process: no cluster needed",
		Long: `demo opens the TUI on a cluster simulated inside this process. The controller and
the agents are mcotui's real ones; only the API server, the nodes' hosts (systemd,
reboots), their kubelets and the workloads are simulated, with a real cluster's
timings compressed. Nothing outside a temporary directory is touched, and it is
removed when you quit.

Up to ` + fmt.Sprint(demo.MaxAgents) + ` nodes each run a real agent. Past that (--nodes goes to ` + fmt.Sprint(demo.MaxNodes) + `, to see the
TUI at scale), the extra workers are played by a light stand-in, labelled
` + demo.StandInLabel + `=true: one loop that writes the objects an agent writes (state and
currentConfig annotations, MachineConfigNode phases) with an update's pacing, but applies
nothing, never drains nor reboots, and never fails. Their pool then updates a tenth of
its workers at a time, and the story takes longer (its rollouts wait for every node).

What you will see (about a minute and a half at --speed 1):
  - three masters and --nodes minus three workers, all up to date on their pools'
    rendered configs, with shop workloads (some behind PodDisruptionBudgets) on the
    workers;
  - MachineConfig 99-worker-chrony adds /etc/chrony.conf: the worker pool renders a new
    config and rolls it out two nodes at a time (maxUnavailable 2); the node disruption
    policy restarts chronyd, so nodes are neither drained nor rebooted;
  - one worker's chronyd fails to restart: the node goes NodeDegraded with the reason,
    its agent rolls back and retries with backoff, and once the host is repaired the
    retry succeeds;
  - boot images switch from Partial (MachineSets labelled update-boot-image=true) to
    All, and every MachineSet is patched to the release's AMI;
  - MachineConfigs 99-master-node-exporter and 99-worker-node-exporter enable a unit:
    every node is cordoned, drained (evictions wait for the budgets) and rebooted
    (NotReady for a few seconds), masters one at a time, workers two at a time;
  - meanwhile both pools are in image mode: the demo plays MCO's build controller (it
    writes the MachineOSBuilds MCO would and builds nothing; the rollouts do not wait
    for them): master's first build fails, worker's succeeds after a minute, and each
    new rendered config is built again.
After that the cluster is yours. A line above the keys says what happens as it
happens, and what to try.

Keys to try:
  :pool worker  show the worker pool's nodes in the grid (:all shows every pool)
  tab           move between the pools pane and the grid; j/k and enter pick a pool
  enter         on a node: its phases, the drain's blockers, the reason it degraded
  r             on the failed node: retry now rather than after its backoff
  p             pause or resume the selected pool
  m             change the pool's maxUnavailable
  P             preview the next rollout wave by wave
  b             boot images: m changes the mode, e the Partial selector
  c             the pool's configs: x marks one, d diffs another against it
  i             image builds: r asks for the pool's current build again (master's
                first build fails; a new rendered config's build supersedes it)
  ?             every key; q quits

Every change asks for confirmation and says what it writes, as on a real cluster.`,
		Example: `  # The default: 12 nodes at a real cluster's pace, compressed
  mcotui demo

  # A bigger cluster, twice as fast
  mcotui demo --nodes 30 --speed 2

  # Five thousand nodes: sixty with real agents, the rest stand-ins
  mcotui demo --nodes 5000

  # Keep the controller's and agents' log
  mcotui demo --log /tmp/mcotui-demo.log`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Sim.Nodes, "nodes", demo.DefaultNodes, fmt.Sprintf("number of nodes, three of them masters (%d to %d; past %d, stand-ins without agents)", demo.MinNodes, demo.MaxNodes, demo.MaxAgents))
	fl.Float64Var(&o.Sim.Speed, "speed", 1, fmt.Sprintf("how much faster than a real cluster (%g to %g)", demo.MinSpeed, demo.MaxSpeed))
	fl.Uint64Var(&o.Sim.Seed, "seed", 1, "seed of the timings' jitter and of which worker fails")
	fl.BoolVar(&o.Sim.OpenShiftNames, "openshift-names", false, "name the nodes as an OpenShift installer does on a cloud (ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12) rather than worker-0")
	fl.StringVar(&o.LogFile, "log", "", "append the log of the controller, the agents and the TUI to this file (default: discarded)")
	return cmd
}

// Complete has nothing to fill.
func (o *DemoOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks the simulation's size, pace and seed.
func (o *DemoOptions) Validate() error {
	if err := o.Sim.Validate(); err != nil {
		return cmdutil.UsageHelp(err)
	}
	return nil
}

// Run starts the simulation and opens the TUI on it, and removes it all once the TUI
// is quit.
func (o *DemoOptions) Run(ctx context.Context) error {
	s, opts := o.IOStreams, o.Sim
	in, inOK := s.In.(*os.File)
	out, outOK := s.Out.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return cmdutil.UsageErr(errors.New("the demo is the TUI and needs a terminal; run it in one (tmux and SSH sessions are terminals)"))
	}
	log := slog.New(slog.DiscardHandler)
	if o.LogFile != "" {
		f, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return cmdutil.UsageErr(fmt.Errorf("--log: %w", err))
		}
		defer f.Close()
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	// client-go logs through klog, to stderr unless told otherwise; the simulation runs
	// before the TUI takes the terminal (and TUIOptions.Run points klog at the same place).
	klog.SetLogger(logr.FromSlogHandler(log.Handler()))
	defer klog.SetLogger(logr.Discard())

	dir, err := os.MkdirTemp("", "mcotui-demo-")
	if err != nil {
		return fmt.Errorf("demo: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// A closed terminal or a kill ends the demo as q does, so the directory goes too.
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srv, err := apisim.Start(ctx, apisim.Options{Logger: log.With("part", "apisim")})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer srv.Close()
	cfg := srv.Config()
	kubeconfig, err := writeDemoKubeconfig(dir, cfg.Host)
	if err != nil {
		return err
	}
	opts.Config, opts.Dir, opts.Log = cfg, filepath.Join(dir, "cluster"), log
	// The TUI shows the story's latest step; the story must not wait for it.
	narration := make(chan string, 1)
	opts.Progress = func(step string) {
		log.Info("demo: " + step)
		sendLatest(narration, step)
	}
	if err := os.Mkdir(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	// The TUI opens at once, on the API server as the simulation seeds it: seeding
	// takes seconds (about 15 at 2,000 nodes), which would otherwise be a blank terminal.
	sendLatest(narration, fmt.Sprintf("Seeding the simulated cluster: %d nodes, their pools and workloads…", opts.Nodes))
	type started struct {
		d   *demo.Demo
		err error
	}
	start := make(chan started, 1)
	go func() {
		d, err := demo.Start(ctx, opts)
		if err != nil {
			cancel() // the TUI quits, and the error says why
		}
		start <- started{d, err}
	}()
	tuiOpts := &TUIOptions{IOStreams: s, Kube: cmdutil.KubeFlags{Kubeconfig: kubeconfig}, LogFile: o.LogFile, Narration: narration}
	tuiErr := tuiOpts.Run(ctx)
	userQuit := ctx.Err() == nil
	cancel()
	st := <-start
	switch {
	case st.err != nil && (userQuit || errors.Is(st.err, context.Canceled)):
		return tuiErr // quit while it seeded: the seeding stopped because of it
	case st.err != nil:
		return st.err
	}
	// The simulation's own failure explains a TUI that stopped because of it.
	if err := st.d.Wait(); err != nil {
		return err
	}
	return tuiErr
}

// sendLatest puts s on ch, a channel of capacity 1 that it alone sends on, in place of
// a message not yet read: the reader wants the latest, and the sender never waits.
func sendLatest(ch chan string, s string) {
	for {
		select {
		case ch <- s:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// writeDemoKubeconfig writes a kubeconfig for the simulated API server, for the TUI,
// which reads its cluster the way it reads a real one.
func writeDemoKubeconfig(dir, server string) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["demo"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["demo"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[demoContext] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "demo"}
	cfg.CurrentContext = demoContext
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("demo: write the kubeconfig: %w", err)
	}
	return path, nil
}
