package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
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
	o.Kube.Add(fl, f.Version)
	fl.StringVar(&o.MaxUnavailableFlag, "max-unavailable", "", "set the pool's spec.maxUnavailable first: a number of nodes (2) or a percentage of the pool (25%)")
	fl.BoolVar(&o.Wait, "wait", false, "follow the rollout until the pool is updated, a node degrades or --timeout passes")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (exit 2)")
	fl.StringVar(&o.Namespace, "namespace", controller.DefaultNamespace, "the namespace of mcotui's controller Lease, to tell whether a controller drives the rollout")
	fl.DurationVar(&o.Interval, "poll-interval", time.Second, "with --wait, how often to look at the pool and its nodes")
	_ = fl.MarkHidden("poll-interval")
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
	return nil
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
	probe := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}, Spec: mcfgv1.MachineConfigPoolSpec{MaxUnavailable: &p}}
	if _, err := rollout.MaxUnavailable(probe, 100); err != nil || (p.Type == intstr.String && !strings.HasSuffix(v, "%")) {
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
	reader := controller.NewDriver(c, controller.DriverOptions{})
	st, err := reader.Read(ctx, name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("machineconfigpool %q not found", name)
	}
	if err != nil {
		return err
	}
	if st.Pool.Spec.Configuration.Name == "" {
		return fmt.Errorf("machineconfigpool %s has not been rendered yet (spec.configuration.name is empty); its RenderDegraded condition says why (mcotui status %s)", name, name)
	}
	forecast, err := rollout.Preview(st.Pool, rollout.PlanningView(st.Nodes), rollout.Options{}, controller.NewDiffer(c).Diff)
	if err != nil {
		return err
	}
	if err := writePlan(s.Out, forecast, st); err != nil {
		return err
	}
	who, nobody := whoDrives(ctx, c, o.Namespace, o.Wait, s.ErrOut)
	if who != "" {
		fmt.Fprintln(s.Out, who)
	}
	if !o.Wait {
		return nil
	}
	if !nobody {
		return followRollout(ctx, s.Out, c, name, o.Timeout, o.Interval, nil)
	}
	out := &lockedWriter{w: s.Out}
	d := startDriving(ctx, c, name, o, out, s.ErrOut)
	defer d.stop()
	return followRollout(ctx, out, c, name, o.Timeout, o.Interval, d)
}

// whoDrives says what moves the rollout forward: MCO, a controller holding the Lease,
// or nothing (nobody true). When nothing does and the command will not drive it
// (willDrive false), a warning goes to errOut.
func whoDrives(ctx context.Context, c *kube.Clients, namespace string, willDrive bool, errOut io.Writer) (who string, nobody bool) {
	if found, evidence, err := kube.DetectMCO(ctx, c.Kube); err == nil && found {
		return "Driven by the Machine Config Operator (" + evidence + ").", false
	}
	holder, held, err := controller.LeaseHolder(ctx, c.Kube, namespace, controller.LeaseName, time.Now())
	switch {
	case apierrors.IsForbidden(err):
		// Allowed to follow but not to read the Lease: then not to take it either.
		fmt.Fprintf(errOut, "Warning: cannot read the lease %s/%s (%v): following the rollout without driving it; a controller, or someone allowed to take the lease, must drive it.\n", namespace, controller.LeaseName, err)
		return "", false
	case err != nil:
		fmt.Fprintf(errOut, "Warning: cannot tell whether a controller drives this rollout: %v\n", err)
		return "", false
	case held:
		return fmt.Sprintf("Driven by mcotui controller %s (lease %s/%s).", holder, namespace, controller.LeaseName), false
	case willDrive:
		return fmt.Sprintf("No mcotui controller holds the lease %s/%s: this command drives the rollout while it waits, as %s.", namespace, controller.LeaseName, rolloutIdentity()), true
	}
	fmt.Fprintf(errOut, "Warning: no mcotui controller holds the lease %s/%s and the Machine Config Operator does not run: nothing drives this rollout. Start the controller (mcotui install | kubectl apply -f -), pass --wait to drive it from here while it runs, or pass --namespace if the controller runs elsewhere.\n", namespace, controller.LeaseName)
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

// driving is controller.DrivePool running beside followRollout.
type driving struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once DrivePool has returned (and released the Lease)
	end    controller.DriveEnd
	err    error
}

func startDriving(ctx context.Context, c *kube.Clients, pool string, o *RolloutOptions, out, errOut io.Writer) *driving {
	ctx, cancel := context.WithCancel(ctx)
	d := &driving{cancel: cancel, done: make(chan struct{})}
	opts := controller.DriveOptions{Identity: rolloutIdentity(), Namespace: o.Namespace, Interval: o.Interval}
	go func() {
		defer close(d.done)
		d.end, d.err = controller.DrivePool(ctx, c, pool, opts, func(r controller.DriveReport) {
			switch {
			case r.Err != nil:
				fmt.Fprintf(errOut, "Warning: driving pool %s: %v (trying again)\n", pool, r.Err)
			case len(r.Step.Targets) > 0:
				fmt.Fprintf(out, "%s  targeted %s with %s\n", time.Now().Format("15:04:05"), strings.Join(r.Step.Targets, ", "), r.Step.Target)
			case r.End == controller.DrivePaused:
				fmt.Fprintf(out, "%s; resume it (mcotui resume %s) and run rollout --wait again to drive it\n", r.Message, pool)
			}
		})
	}()
	return d
}

// stop ends the driving and waits until the Lease is released.
func (d *driving) stop() {
	d.cancel()
	<-d.done
}

// writePlan prints the forecast: a summary, the waves, and the blocked nodes.
func writePlan(w io.Writer, f rollout.Forecast, st controller.PoolState) error {
	paused := ""
	if f.Paused {
		paused = " The pool is paused: nothing happens until it is resumed (mcotui resume " + f.Pool + ")."
	}
	toGo := 0
	for _, wave := range f.Waves {
		toGo += len(wave.Nodes)
	}
	// The rest are on their way already: targeted, their agents at work.
	updating := len(st.Nodes) - len(f.AtTarget) - toGo - len(f.Blocked)
	progress := ""
	if updating > 0 {
		progress = fmt.Sprintf(", %d updating", updating)
	}
	fmt.Fprintf(w, "Pool %s: %s on %d of %d nodes%s; %d to update in %d waves, maxUnavailable %d.%s\n",
		f.Pool, f.Target, len(f.AtTarget), len(st.Nodes), progress, toGo, len(f.Waves), f.MaxUnavailable, paused)
	for _, p := range st.Problems {
		fmt.Fprintf(w, "Warning: %v\n", p)
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

// followRollout polls the pool and its nodes until the pool is updated (nil), a node
// fails (exit 1) or timeout passes (exit 2), printing progress. When this command
// drives the rollout (d not nil), a failure to drive it ends the wait with its error.
func followRollout(ctx context.Context, w io.Writer, c *kube.Clients, name string, timeout, interval time.Duration, d *driving) error {
	// The timeout is the rollout's, not the reads': a read is never cut short by it.
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	f := follower{w: w, reader: controller.NewDriver(c, controller.DriverOptions{}), c: c, name: name, phases: map[string]string{}}
	var driverDone <-chan struct{}
	if d != nil {
		driverDone = d.done
	}
	for {
		done, err := f.poll(ctx)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			fmt.Fprintf(w, "timed out after %s: %d of %d nodes updated\n", timeout, f.updated, f.total)
			return cmdutil.ExitCode(exitRolloutTimeout)
		case <-driverDone:
			switch {
			case errors.Is(d.err, controller.ErrLeaseHeld):
				// A controller took the Lease between the look and the try: it drives.
				fmt.Fprintf(w, "%v; following it.\n", d.err)
			case d.err != nil:
				return d.err
			}
			// Updated or degraded: the next poll says so. Paused: nothing moves until
			// the pool is resumed and someone drives it, or the timeout.
			driverDone = nil
		case <-tick.C:
		}
	}
}

// follower remembers what followRollout has printed.
type follower struct {
	w      io.Writer
	reader *controller.Driver
	c      *kube.Clients
	name   string

	phases         map[string]string
	bar            string
	updated, total int
}

// poll reads the pool once and prints what changed. done with a nil error: the pool is
// updated; an exit error: a node failed.
func (f *follower) poll(ctx context.Context) (done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := f.reader.Read(ctx, f.name)
	if err != nil {
		return false, err
	}
	mcns := readMCNs(ctx, f.c)
	target := st.Pool.Spec.Configuration.Name
	f.updated, f.total = 0, len(st.Nodes)
	var failed []*corev1.Node
	for _, n := range st.Nodes {
		ph := nodePhase(n, mcns[n.Name], target)
		if old, seen := f.phases[n.Name]; !seen || old != ph {
			change := ph
			if seen {
				change = old + " -> " + ph
			}
			fmt.Fprintf(f.w, "%s  %s: %s\n", time.Now().Format("15:04:05"), n.Name, change)
			f.phases[n.Name] = ph
		}
		if rollout.DoneAt(n, target) {
			f.updated++
		}
		if nodeanno.Desired(n) == target && rollout.Degraded(n) {
			failed = append(failed, n)
		}
	}
	if bar := progressBar(f.updated, f.total, target); bar != f.bar {
		fmt.Fprintln(f.w, bar)
		f.bar = bar
	}
	if len(failed) > 0 {
		for _, n := range failed {
			fmt.Fprintf(f.w, "node %s failed to update to %s (state %s): %s\n", n.Name, target, nodeanno.State(n), nodeanno.Reason(n))
		}
		return true, cmdutil.ExitCode(exitRolloutDegraded)
	}
	if rollout.PoolUpdated(st.Pool) {
		fmt.Fprintf(f.w, "machineconfigpool %s is updated: all %d nodes run %s\n", f.name, f.total, target)
		return true, nil
	}
	return false, nil
}

func readMCNs(ctx context.Context, c *kube.Clients) map[string]*mcfgv1.MachineConfigNode {
	out := map[string]*mcfgv1.MachineConfigNode{}
	list, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out // phases then come from the node annotations alone
	}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// nodePhase names where the node is in its update to target, for the progress lines.
func nodePhase(n *corev1.Node, mcn *mcfgv1.MachineConfigNode, target string) string {
	switch {
	case rollout.Degraded(n):
		return fmt.Sprintf("Degraded (%s)", nodeanno.Reason(n))
	case nodeanno.Desired(n) != target:
		return "Waiting"
	case rollout.DoneAt(n, target):
		return "Updated"
	}
	if mcn != nil && mcn.Spec.ConfigVersion.Desired == target {
		last := ""
		for _, t := range phase.Columns {
			if t == phase.Updated || t == phase.Resumed || t == phase.NodeDegraded {
				continue
			}
			c, ok := phase.Find(mcn.Status.Conditions, t)
			switch {
			case !ok || c.Status == metav1.ConditionFalse:
			case c.Status == metav1.ConditionUnknown:
				last = string(t) + " (in progress)"
			default:
				last = string(t)
			}
		}
		if last != "" {
			return last
		}
	}
	if nodeanno.State(n) == nodeanno.StateWorking {
		return "Working"
	}
	return "Targeted"
}

// progressBar draws "[######--------------] 3/10 nodes updated to X".
func progressBar(done, total int, target string) string {
	const width = 20
	filled := 0
	if total > 0 {
		filled = done * width / total
	}
	return fmt.Sprintf("[%s%s] %d/%d nodes updated to %s", strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total, target)
}
