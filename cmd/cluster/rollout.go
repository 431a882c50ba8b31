package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// Exit codes of rollout --wait besides cmdutil.ExitOK.
const (
	exitRolloutDegraded = 1
	exitRolloutTimeout  = 2
)

// RolloutOptions are `mcotui rollout`'s.
type RolloutOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Pool is the MachineConfigPool whose rollout is shown.
	Pool string
	// MaxUnavailableFlag is --max-unavailable as given; MaxUnavailable is it read, nil
	// when the flag is not given.
	MaxUnavailableFlag string
	MaxUnavailable     *intstr.IntOrString
	// Wait follows the rollout, Timeout long at most, polling every Interval.
	Wait              bool
	Timeout, Interval time.Duration
	// Namespace is that of the controller's Lease.
	Namespace string
	// Prometheus is what the pool's alert gate asks while --wait drives the pool.
	Prometheus cmdutil.PrometheusFlag
}

// NewCmdRollout is `mcotui rollout`; runF, when not nil, replaces the run step.
func NewCmdRollout(f *cmdutil.Factory, runF func(*RolloutOptions) error) *cobra.Command {
	o := &RolloutOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "rollout POOL [--max-unavailable N|N%] [--wait] [--timeout D]",
		Short: "Show a pool's rollout plan, set its maxUnavailable, and follow it to the end",
		Long: `rollout prints the plan of a MachineConfigPool's rollout to its rendered config
(spec.configuration.name): the nodes in the order they will be updated, wave by wave,
maxUnavailable at a time, by zone and then age as MCO orders them, each with the
disruption its update predicts (the post-config actions of the node disruption policy
for the change from the config it runs, and whether it drains), and the nodes that
cannot be updated and why (not Ready, cordoned by an administrator, failed).

The drain forecast then names every node whose drain will block or lose data: pods
under a PodDisruptionBudget that allows no disruption now, pods no controller manages,
pods with emptyDir or local volumes; and whether the pool's other nodes have room for
the pods of the maxUnavailable busiest nodes while they are cordoned
(docs/drain-forecast.md).

--max-unavailable first sets the pool's spec.maxUnavailable, an integer or a percentage
of the pool's nodes (rounded down, at least 1), as on OpenShift.

Without --wait, rollout changes no node: the rollout is driven by mcotui's controller,
or by the Machine Config Operator on OpenShift; rollout says which one drives it, or
warns that none does.

--wait follows the rollout: a progress bar when the count of updated nodes changes, and
a line whenever a node moves to another phase (Waiting, Targeted, UpdatePrepared,
Cordoned, Drained, AppliedFilesAndOS, UpdatePostActionComplete, RebootedNode,
Uncordoned, Updated, or Degraded with its reason). When neither MCO nor a controller
drives the pool, --wait drives it itself while it waits: it takes the controller's
Lease (--namespace) as mcotui-rollout@HOST:PID, so that nothing else drives at the
same time, and gives the pool's nodes their new config maxUnavailable at a time,
exactly as the controller would, until the pool is updated, a node fails, the pool is
paused or the command ends; then it releases the Lease. A controller started meanwhile
waits for it, and takes over once it is released.

The pool's rollout policy (mcotui.io/ annotations on the pool: maintenance windows,
health gates, update order; on nodes: holds and priorities; see docs/controller.md,
"Rollout policy") orders the plan and holds the rollout as it holds the controller's: the plan
says what the policy does now. While --wait drives, --prometheus-url is what an alert
gate asks.

Exit status with --wait: 0 when every node of the pool is updated; 1 as soon as a node
fails its update (Degraded or Unreconcilable); 2 when --timeout passes first. Without
--wait: 0 once the plan is printed. An error (no such pool, no cluster) exits 1, a usage
error 2.`,
		Example: `  # What would happen, and in what order
  mcotui rollout worker

  # Two nodes at a time, and follow it to the end (at most an hour)
  mcotui rollout worker --max-unavailable 2 --wait --timeout 1h

  # In CI: fail the pipeline when a node degrades
  mcotui rollout infra --max-unavailable 25% --wait || exit 1`,
		Args:              cmdutil.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: o.Kube.CompletePools,
		RunE:              cmdutil.RunE(o, runF),
	}
	fl := cmd.Flags()
	o.Kube.Add(fl, f)
	fl.StringVar(&o.MaxUnavailableFlag, "max-unavailable", "", "set the pool's spec.maxUnavailable first: a number of nodes (2) or a percentage of the pool (25%)")
	fl.BoolVar(&o.Wait, "wait", false, "follow the rollout until the pool is updated, a node degrades or --timeout passes")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (exit 2)")
	fl.StringVar(&o.Namespace, "namespace", install.Namespace, "the namespace of mcotui's controller Lease, to tell whether a controller drives the rollout")
	fl.DurationVar(&o.Interval, "poll-interval", time.Second, "with --wait, how often to look at the pool and its nodes")
	_ = fl.MarkHidden("poll-interval")
	o.Prometheus.Add(fl)
	return cmd
}

// Complete takes the pool from the arguments and reads --max-unavailable, when given; a
// bad value is a usage error.
func (o *RolloutOptions) Complete(c *cobra.Command, args []string) error {
	o.Pool = args[0]
	if c.Flags().Changed("max-unavailable") {
		v, err := parseMaxUnavailable(o.MaxUnavailableFlag)
		if err != nil {
			return cmdutil.UsageHelp(err)
		}
		o.MaxUnavailable = &v
	}
	return nil
}

// Validate checks the timeout.
func (o *RolloutOptions) Validate() error {
	if o.Timeout <= 0 {
		return cmdutil.UsageHelp(fmt.Errorf("--timeout %s: give a positive duration such as 30m", o.Timeout))
	}
	return o.Prometheus.Validate()
}

// Run sets maxUnavailable when asked, prints the plan and who drives it, and with Wait
// follows the rollout, driving it when nothing else does.
func (o *RolloutOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	return runRollout(ctx, o.IOStreams, clients, o)
}

// parseMaxUnavailable reads "2" as an integer and "25%" as a percentage.
func parseMaxUnavailable(v string) (intstr.IntOrString, error) {
	p := intstr.Parse(v)
	if _, err := rollout.CheckMaxUnavailable("", p, 100); err != nil {
		return p, fmt.Errorf("--max-unavailable %q: give a number of nodes such as 2 or a percentage such as 25%%", v)
	}
	return p, nil
}

func runRollout(ctx context.Context, s cmdutil.IOStreams, c *kube.Clients, o *RolloutOptions) error {
	name, mu := o.Pool, o.MaxUnavailable
	if mu != nil {
		if err := kube.SetMaxUnavailable(ctx, c, name, *mu, "mcotui"); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("machineconfigpool %q not found", name)
			}
			return err
		}
		fmt.Fprintf(s.Out, "machineconfigpool.machineconfiguration.openshift.io/%s maxUnavailable set to %s\n", name, mu.String())
	}
	st, err := controller.ReadPool(ctx, c, name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("machineconfigpool %q not found", name)
	}
	if err != nil {
		return err
	}
	if st.Pool.Spec.Configuration.Name == "" {
		return fmt.Errorf("machineconfigpool %s has not been rendered yet (spec.configuration.name is empty); its RenderDegraded condition says why (mcotui status %s)", name, name)
	}
	pol, err := policy.FromPool(st.Pool)
	if err != nil {
		return fmt.Errorf("%w; fix the annotation (kubectl annotate mcp %s KEY=VALUE --overwrite, or KEY- to remove it): no node is targeted until then", err, name)
	}
	differ := controller.NewDiffer(c)
	forecast, err := rollout.Preview(st.Pool, rollout.PlanningView(st.Nodes), rollout.Options{Policy: pol}, differ.Diff)
	if err != nil {
		return err
	}
	if err := writePlan(s.Out, forecast, st); err != nil {
		return err
	}
	writeKargsMethods(s.Out, forecast, st.Nodes, differ.ChangesKernelArgs)
	writeDrainForecast(ctx, s.Out, s.ErrOut, c, forecast, st.Nodes)
	if sum := pol.Summary(time.Now()); sum != "" {
		fmt.Fprintf(s.Out, "Policy: %s.\n", sum)
	}
	who, nobody := whoDrives(ctx, c, o.Namespace, o.Wait, s.ErrOut)
	if who != "" {
		fmt.Fprintln(s.Out, who)
	}
	if !o.Wait {
		return nil
	}
	if !nobody {
		return follow(ctx, s.Out, c, name, o, nil)
	}
	out := &lockedWriter{w: s.Out}
	ctx, cancel := context.WithCancel(ctx)
	session, done := startDriving(ctx, c, name, o, out, s.ErrOut)
	defer func() {
		cancel()
		session.Wait() // the Lease released before the command ends
	}()
	return follow(ctx, out, c, name, o, done)
}

// whoDrives says what moves the rollout forward: MCO, a controller holding the Lease,
// or nothing (nobody true). When nothing does and the command will not drive it
// (willDrive false), a warning goes to errOut.
func whoDrives(ctx context.Context, c *kube.Clients, namespace string, willDrive bool, errOut io.Writer) (who string, nobody bool) {
	if found, evidence, err := kube.DetectMCO(ctx, c.Kube); err == nil && found {
		return "Driven by the Machine Config Operator (" + evidence + ").", false
	}
	holder, held, err := kube.LeaseHolder(ctx, c.Kube, namespace, install.LeaseName, time.Now())
	switch {
	case apierrors.IsForbidden(err):
		// Allowed to follow but not to read the Lease: then not to take it either.
		fmt.Fprintf(errOut, "Warning: cannot read the lease %s/%s (%v): following the rollout without driving it; a controller, or someone allowed to take the lease, must drive it.\n", namespace, install.LeaseName, err)
		return "", false
	case err != nil:
		fmt.Fprintf(errOut, "Warning: cannot tell whether a controller drives this rollout: %v\n", err)
		return "", false
	case held:
		return fmt.Sprintf("Driven by mcotui controller %s (lease %s/%s).", holder, namespace, install.LeaseName), false
	case willDrive:
		return fmt.Sprintf("No mcotui controller holds the lease %s/%s: this command drives the rollout while it waits, as %s.", namespace, install.LeaseName, rolloutIdentity()), true
	}
	fmt.Fprintf(errOut, "Warning: no mcotui controller holds the lease %s/%s and the Machine Config Operator does not run: nothing drives this rollout. Start the controller (mcotui install | kubectl apply -f -), pass --wait to drive it from here while it runs, or pass --namespace if the controller runs elsewhere.\n", namespace, install.LeaseName)
	return "", true
}

// rolloutIdentity names `rollout --wait` in the Lease and in the managedFields of the
// nodes it targets.
func rolloutIdentity() string { return cmdutil.DriverIdentity("mcotui-rollout") }

// lockedWriter lets the driver's lines and the follower's share stdout.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startDriving drives the pool from this process in the background (a
// controller.DriveSession, ending with ctx), its reports as lines on out and warnings
// on errOut; done receives the drive's error once it has ended.
func startDriving(ctx context.Context, c *kube.Clients, pool string, o *RolloutOptions, out, errOut io.Writer) (session *controller.DriveSession, done <-chan error) {
	opts := controller.DriveOptions{Identity: rolloutIdentity(), Namespace: o.Namespace, Interval: o.Interval}
	if alerts, err := o.Prometheus.Alerts(); err == nil && alerts != nil {
		opts.Alerts = alerts
	}
	session = controller.NewDriveSession(ctx, c, opts)
	return session, session.Start(ctx, pool, func(r controller.DriveReport) {
		switch {
		case r.Err != nil:
			fmt.Fprintf(errOut, "Warning: driving pool %s: %v (trying again)\n", pool, r.Err)
		case len(r.Step.Targets) > 0:
			fmt.Fprintf(out, "%s  targeted %s with %s\n", time.Now().Format("15:04:05"), strings.Join(r.Step.Targets, ", "), r.Step.Target)
		case r.End == controller.DrivePaused:
			fmt.Fprintf(out, "%s; resume it (mcotui resume %s) and run rollout --wait again to drive it\n", r.Message, pool)
		}
	})
}

// follow follows the rollout (followRollout) to its end, after the pool's OS image
// build when it has one (followBuild), as rollout --wait's exit status: 0 updated, 1 a
// node or the build failed, 2 timed out. driving, when not nil, receives the error of
// this process's drive.
func follow(ctx context.Context, w io.Writer, c *kube.Clients, pool string, o *RolloutOptions, driving <-chan error) error {
	// An image mode pool's nodes wait for MCO's OS image build: follow it first.
	rest, err := followBuild(ctx, w, c, pool, o.Timeout, o.Interval)
	if err != nil {
		return err
	}
	rest = max(rest, time.Millisecond) // the time left is spent: the follow times out at once
	end, err := followRollout(ctx, w, c, pool, followOptions{Timeout: rest, Interval: o.Interval, Driving: driving})
	switch {
	case err != nil:
		return err
	case end == followDegraded:
		return cmdutil.ExitCode(exitRolloutDegraded)
	case end == followTimedOut:
		return cmdutil.ExitCode(exitRolloutTimeout)
	}
	return nil
}

// writePlan prints the forecast: a summary, the waves, and the blocked nodes.
func writePlan(w io.Writer, f rollout.Forecast, st controller.PoolState) error {
	paused := ""
	if f.Paused {
		paused = " The pool is paused: nothing happens until it is resumed (mcotui resume " + f.Pool + ")."
	}
	toGo, updating := f.ToUpdate(), f.Updating(len(st.Nodes))
	progress := ""
	if updating > 0 {
		progress = fmt.Sprintf(", %d updating", updating)
	}
	fmt.Fprintf(w, "Pool %s: %s on %d of %d nodes%s; %d to update in %d waves, maxUnavailable %d.%s\n",
		f.Pool, f.Target, len(f.AtTarget), len(st.Nodes), progress, toGo, len(f.Waves), f.MaxUnavailable, paused)
	for _, p := range st.Problems {
		fmt.Fprintf(w, "Warning: %v\n", p)
	}
	if len(f.InFlight) > 0 {
		// Wave 1 is the next step only when nothing waits for these: say which.
		when := "the forecast assumes they finish with wave 1"
		switch {
		case len(f.Waves) > 0 && f.Waves[0].AfterInFlight:
			when = "they hold all of maxUnavailable: wave 1 starts once they finish"
		case len(f.Waves) == 0:
			when = "the forecast assumes they finish"
		}
		fmt.Fprintf(w, "In flight now: %s (%s).\n", strings.Join(f.InFlight, ", "), when)
	}
	if len(f.Waves) > 0 {
		fmt.Fprintln(w)
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "WAVE\tNODE\tZONE\tFROM\tACTIONS\tDRAIN")
		for i, wave := range f.Waves {
			label := fmt.Sprint(i + 1)
			if wave.Canary {
				label += " (canary)"
			}
			for _, n := range wave.Nodes {
				from := rollout.ConfigName(n.From)
				if from == "" {
					from = "<none>"
				}
				zone := n.Zone
				if zone == "" {
					zone = "<none>"
				}
				actions, drain := disruption.Join(n.Decision.Actions), "no"
				if n.Decision.Drain {
					drain = "yes"
				}
				if n.Err != nil {
					actions, drain = "unknown: "+n.Err.Error(), "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", label, n.Node, zone, from, actions, drain)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(f.Blocked) > 0 {
		fmt.Fprintln(w, "\nBlocked:")
		for _, b := range f.Blocked {
			fmt.Fprintf(w, "  %s: %s\n", b.Node, b.Message)
		}
	}
	fmt.Fprintln(w)
	return nil
}
