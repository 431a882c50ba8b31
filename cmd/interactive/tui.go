package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/source"
)

// coalesce gathers the events of a burst (a rollout wave updating many
// MachineConfigNodes at once) into one frame.
const coalesce = 30 * time.Millisecond

// coalesceListing is the TUI's frame interval while the initial lists are read: ten
// frames a second show the rows filling in, and leave the CPU to reading them.
const coalesceListing = 100 * time.Millisecond

// TUIOptions are the root command's: `mcotui` alone opens the TUI.
type TUIOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// ReadOnly offers no action that changes the cluster.
	ReadOnly bool
	// LogFile, when set, is where the TUI's log is appended.
	LogFile string
	// Namespace is that of the controller's Lease, which the TUI holds while it drives.
	Namespace string
	// Prometheus is what pools' alert gates ask while the TUI drives them.
	Prometheus cmdutil.PrometheusFlag
	// Narration is shown above the TUI's footer (tui.Options.Narration): the demo's
	// story. Not a flag; nil for `mcotui`.
	Narration <-chan string
}

// AddTUI makes the root command open the TUI when it is run without a subcommand, and
// adds `serve`, the TUI over SSH, so that the command tree needs one line for both;
// runF, when not nil, replaces the TUI's run step.
func AddTUI(root *cobra.Command, f *cmdutil.Factory, runF func(*TUIOptions) error) {
	root.AddCommand(NewCmdServe(f, nil))
	o := &TUIOptions{IOStreams: f.IOStreams}
	root.Args = cmdutil.UsageArgs(cobra.NoArgs)
	root.RunE = cmdutil.RunE(o, runF)
	root.Long += `

Run without a command, mcotui opens its terminal UI on the current kubeconfig context
(--kubeconfig, --context, $KUBECONFIG as kubectl reads them): the pools as
` + "`oc get mcp`" + ` shows them, every node's update phase by phase, boot images and configs.
It can pause and resume a pool, change its maxUnavailable, preview and start a rollout,
roll back, retry a failed node and switch boot image modes; each change is confirmed
first and says what it writes. When no mcotui controller holds its Lease (in
--namespace), D drives a pool's rollout from the terminal while it stays open, as the
controller would, holding that Lease meanwhile. On OpenShift, where the Machine Config
Operator runs, only pausing, maxUnavailable and boot image modes are offered.
--read-only offers no change at all. Press ? for every key. NO_COLOR (any value) draws
without colour.

` + "`mcotui serve`" + ` serves the same UI over SSH.`
	fl := root.Flags()
	o.Kube.Add(fl, f)
	fl.BoolVar(&o.ReadOnly, "read-only", false, "offer no action that changes the cluster")
	fl.StringVar(&o.LogFile, "log", "", "append the TUI's log (watch errors, actions taken) to this file")
	fl.StringVar(&o.Namespace, "namespace", install.Namespace, "the namespace of mcotui's controller Lease, which the TUI holds while it drives a rollout")
	o.Prometheus.Add(fl)
}

// Complete has nothing to fill.
func (o *TUIOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks --prometheus-url; whether the streams are a terminal is Run's to find.
func (o *TUIOptions) Validate() error { return o.Prometheus.Validate() }

// Run opens the TUI on the streams' terminal.
func (o *TUIOptions) Run(ctx context.Context) error {
	s := o.IOStreams
	in, inOK := s.In.(*os.File)
	out, outOK := s.Out.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return cmdutil.UsageErr(errors.New("the TUI needs a terminal; for scripts use `mcotui status`, `mcotui rollout` or `mcotui bootimages`"))
	}
	log, closeLog, err := tuiLogger(o.LogFile)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	defer closeLog()

	for {
		next, err := o.runOn(ctx, in, out, log)
		if err != nil || next == "" {
			return err
		}
		// :ctx: the same terminal, the TUI again on the context chosen.
		o.Kube.Context = next
	}
}

// runOn runs the TUI on the kubeconfig context of o.Kube until it quits; next is the
// context the user switched to with :ctx, or "".
func (o *TUIOptions) runOn(ctx context.Context, in, out *os.File, log *slog.Logger) (next string, _ error) {
	cfg, err := o.Kube.RESTConfig()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	alerts, err := o.Prometheus.Alerts()
	if err != nil {
		return "", err
	}
	cluster, err := source.New(ctx, cfg, source.Options{Context: contextName(o.Kube.Kubeconfig, o.Kube.Context), Logger: log, Alerts: alerts})
	if err != nil {
		return "", err
	}
	defer cluster.Close()
	// Opened at once, without waiting for the lists: rows appear as they are read
	// (source.Cluster delivers the lists as they arrive), so that on thousands of nodes
	// the first screenful is there long before the last node is, and the status line
	// says "connecting" until everything is listed.
	sub := cluster.Subscribe()
	defer sub.Close()
	go trimMemory(ctx, time.Second)
	opts := tui.Options{ReadOnly: o.ReadOnly, NoColor: os.Getenv("NO_COLOR") != "", Coalesce: coalesce, CoalesceListing: coalesceListing, Narration: o.Narration,
		Events: cluster, Pods: cluster, DrainForecast: cluster, Contexts: contextNames(o.Kube.Kubeconfig)}
	var driver *tuiDriver
	if !o.ReadOnly {
		opts.Actions = source.NewActions(cluster, os.Getenv("USER"))
		clients, err := kube.NewClients(cfg)
		if err != nil {
			return "", err
		}
		driver = newTUIDriver(ctx, clients, o.Namespace, alerts, log)
		opts.Driver = driver
	}
	ui := tui.New(sub, opts)
	p := tea.NewProgram(ui, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(tui.FPS))
	_, err = p.Run()
	// What the TUI drove stops with it, and releases the Lease before the process ends.
	cancel()
	if driver != nil {
		driver.Wait()
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return "", fmt.Errorf("the TUI stopped: %w", err)
	}
	return ui.SwitchTo(), nil
}

// tuiDriver is the TUI's action.Driver: a controller.DriveSession as
// mcotui-tui@HOST:PID, for as long as the TUI runs, its reports in the TUI's terms.
type tuiDriver struct {
	*controller.DriveSession
}

// newTUIDriver drives on the Lease in namespace; "" is mcotui's controller's
// namespace, where its Lease is unless the controller was told otherwise. alerts, when
// not nil, is what the pools' alert gates ask.
func newTUIDriver(ctx context.Context, clients *kube.Clients, namespace string, alerts kube.AlertSource, log *slog.Logger) *tuiDriver {
	return &tuiDriver{controller.NewDriveSession(ctx, clients, controller.DriveOptions{
		Identity: cmdutil.DriverIdentity("mcotui-tui"), Namespace: namespace, Logger: log, Alerts: alerts,
	})}
}

// Drive implements action.Driver.
func (d *tuiDriver) Drive(ctx context.Context, pool string, report func(action.DriveReport)) error {
	_, err := d.DriveSession.Drive(ctx, pool, func(r controller.DriveReport) {
		report(action.DriveReport{
			Leading: r.Leading, Target: r.Step.Target, Targets: r.Step.Targets,
			End: r.End != "", Message: r.Message, Err: r.Err,
		})
	})
	return err
}

// tuiLogger is where the TUI's log goes: a file when --log names one, else nowhere,
// since the terminal is the TUI's. client-go logs through klog to stderr, which would
// draw over the screen; klog is process-wide, and this process is the TUI, so it is
// pointed at the same place.
func tuiLogger(path string) (*slog.Logger, func(), error) {
	if path == "" {
		klog.SetLogger(logr.Discard())
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--log: %w", err)
	}
	h := slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})
	klog.SetLogger(logr.FromSlogHandler(h))
	return slog.New(h), func() { klog.SetLogger(logr.Discard()); _ = f.Close() }, nil
}

// contextNames are the kubeconfig's contexts, sorted, for :ctx; none when it cannot be
// read (in a pod, with its service account).
func contextNames(kubeconfig string) []string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// contextName is the kubeconfig context in use, for the status line: --context, else
// the kubeconfig's current context, else "in-cluster" (a pod's service account).
func contextName(kubeconfig, context string) string {
	if context != "" {
		return context
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err == nil && raw.CurrentContext != "" {
		return raw.CurrentContext
	}
	return "in-cluster"
}
