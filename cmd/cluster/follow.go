package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// `rollout --wait`'s following of a rollout: its printing is this command's, the reads
// the controller's (ReadPool) and core's (rollout.NodePhase, ProgressBar).

// followEnd says how a followed rollout ended.
type followEnd string

// How followRollout ends without an error.
const (
	// followUpdated: the pool is updated.
	followUpdated followEnd = "updated"
	// followDegraded: a node failed its update to the pool's target.
	followDegraded followEnd = "degraded"
	// followTimedOut: followOptions.Timeout passed first.
	followTimedOut followEnd = "timed out"
)

// followOptions configure followRollout.
type followOptions struct {
	// Timeout bounds the rollout, not the reads: a read is never cut short by it.
	Timeout time.Duration
	// Interval is how often the pool and its nodes are read.
	Interval time.Duration
	// Driving, when not nil, receives the error of this process's drive of the
	// rollout (controller.DriveSession.Start) once it has ended: its failure ends the
	// wait with its error.
	Driving <-chan error
}

// followRollout reads pool and its nodes (controller.ReadPool) every o.Interval until the pool is updated, a node
// fails or o.Timeout passes, and writes to w a line whenever a node moves to another
// phase (rollout.NodePhase), a progress bar when the count of updated nodes changes,
// and the end.
func followRollout(ctx context.Context, w io.Writer, c *kube.Clients, pool string, o followOptions) (followEnd, error) {
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	f := follower{w: w, c: c, name: pool, phases: map[string]string{}}
	driverDone := o.Driving
	for {
		end, err := f.poll(ctx)
		if end != "" || err != nil {
			return end, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			fmt.Fprintf(w, "timed out after %s: %d of %d nodes updated\n", o.Timeout, f.updated, f.total)
			return followTimedOut, nil
		case err := <-driverDone:
			switch {
			case errors.Is(err, controller.ErrLeaseHeld):
				// A controller took the Lease between the look and the try: it drives.
				fmt.Fprintf(w, "%v; following it.\n", err)
			case err != nil:
				return "", err
			}
			// Updated or degraded: the next poll says so. Paused: nothing moves until
			// the pool is resumed and someone drives it, or the timeout.
			driverDone = nil
		case <-tick.C:
		}
	}
}

// follower remembers what followRollout has written.
type follower struct {
	w    io.Writer
	c    *kube.Clients
	name string

	phases         map[string]string
	bar            string
	updated, total int
	held           string // the RolloutHeld last written
}

// poll reads the pool once and writes what changed; end is set once the rollout has
// ended.
func (f *follower) poll(ctx context.Context) (end followEnd, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := controller.ReadPool(ctx, f.c, f.name)
	if err != nil {
		return "", err
	}
	mcns := readMCNs(ctx, f.c)
	target := st.Pool.Spec.Configuration.Name
	f.updated, f.total = 0, len(st.Nodes)
	var failed []*corev1.Node
	for _, n := range st.Nodes {
		ph := rollout.NodePhase(n, mcns[n.Name], target)
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
	if bar := rollout.ProgressBar(f.updated, f.total, target); bar != f.bar {
		fmt.Fprintln(f.w, bar)
		f.bar = bar
		// With each step of the bar, the estimate of what is left (core/estimate).
		if line, ok := poolEstimate(st.Pool, st.Nodes, mcns, time.Now()); ok {
			fmt.Fprintln(f.w, "estimated time remaining: "+line)
		}
	}
	// What holds the rollout, as the controller (or this process's drive) says: a pool
	// it waits for, a gate, a hook. A failed hook stops the rollout until someone
	// acts: the wait ends there, as for a failed node.
	if c := rollout.FindCondition(&st.Pool.Status, policy.HeldCondition); c != nil {
		held := ""
		if c.Status == corev1.ConditionTrue {
			held = c.Reason + ": " + c.Message
		}
		if held != f.held {
			if held != "" {
				fmt.Fprintf(f.w, "%s  RolloutHeld %s\n", time.Now().Format("15:04:05"), held)
			} else if f.held != "" {
				fmt.Fprintf(f.w, "%s  RolloutHeld no longer\n", time.Now().Format("15:04:05"))
			}
			f.held = held
		}
		// A failed hook, the pool's or a node's own, is a failure as a degraded node is:
		// the pool cannot end updated until someone acts.
		if c.Status == corev1.ConditionTrue && (c.Reason == rollout.HeldHookFailed || c.Reason == rollout.HeldNodeHookFailed) {
			fmt.Fprintf(f.w, "machineconfigpool %s: %s\n", f.name, c.Message)
			return followDegraded, nil
		}
	}
	if len(failed) > 0 {
		for _, n := range failed {
			fmt.Fprintf(f.w, "node %s failed to update to %s (state %s): %s\n", n.Name, target, nodeanno.State(n), nodeanno.Reason(n))
		}
		return followDegraded, nil
	}
	if rollout.PoolUpdated(st.Pool) && !rollout.HookedRolloutOpen(st.Pool) {
		// (A hooked rollout is over once its after-rollout hook has run.)
		fmt.Fprintf(f.w, "machineconfigpool %s is updated: all %d nodes run %s\n", f.name, f.total, target)
		return followUpdated, nil
	}
	return "", nil
}

// readMCNs lists the MachineConfigNodes by node name; none when they cannot be listed,
// and the phases then come from the node annotations alone.
func readMCNs(ctx context.Context, c *kube.Clients) map[string]*mcfgv1.MachineConfigNode {
	out := map[string]*mcfgv1.MachineConfigNode{}
	list, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out
	}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}
