package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// FollowEnd says how a followed rollout ended.
type FollowEnd string

// How Follow ends without an error.
const (
	// FollowUpdated: the pool is updated.
	FollowUpdated FollowEnd = "updated"
	// FollowDegraded: a node failed its update to the pool's target.
	FollowDegraded FollowEnd = "degraded"
	// FollowTimedOut: FollowOptions.Timeout passed first.
	FollowTimedOut FollowEnd = "timed out"
)

// FollowOptions configure Follow.
type FollowOptions struct {
	// Timeout bounds the rollout, not the reads: a read is never cut short by it.
	Timeout time.Duration
	// Interval is how often the pool and its nodes are read.
	Interval time.Duration
	// Driving, when not nil, is this process driving the rollout (StartDriving): its
	// failure ends the wait with its error.
	Driving *Driving
}

// Follow reads pool and its nodes every o.Interval until the pool is updated, a node
// fails or o.Timeout passes, and writes to w a line whenever a node moves to another
// phase (rollout.NodePhase), a progress bar when the count of updated nodes changes,
// and the end.
func Follow(ctx context.Context, w io.Writer, c *kube.Clients, pool string, o FollowOptions) (FollowEnd, error) {
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	f := follower{w: w, reader: NewDriver(c, DriverOptions{}), c: c, name: pool, phases: map[string]string{}}
	d := o.Driving
	var driverDone <-chan struct{}
	if d != nil {
		driverDone = d.done
	}
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
			return FollowTimedOut, nil
		case <-driverDone:
			switch {
			case errors.Is(d.err, ErrLeaseHeld):
				// A controller took the Lease between the look and the try: it drives.
				fmt.Fprintf(w, "%v; following it.\n", d.err)
			case d.err != nil:
				return "", d.err
			}
			// Updated or degraded: the next poll says so. Paused: nothing moves until
			// the pool is resumed and someone drives it, or the timeout.
			driverDone = nil
		case <-tick.C:
		}
	}
}

// follower remembers what Follow has written.
type follower struct {
	w      io.Writer
	reader *Driver
	c      *kube.Clients
	name   string

	phases         map[string]string
	bar            string
	updated, total int
}

// poll reads the pool once and writes what changed; end is set once the rollout has
// ended.
func (f *follower) poll(ctx context.Context) (end FollowEnd, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := f.reader.Read(ctx, f.name)
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
	}
	if len(failed) > 0 {
		for _, n := range failed {
			fmt.Fprintf(f.w, "node %s failed to update to %s (state %s): %s\n", n.Name, target, nodeanno.State(n), nodeanno.Reason(n))
		}
		return FollowDegraded, nil
	}
	if rollout.PoolUpdated(st.Pool) {
		fmt.Fprintf(f.w, "machineconfigpool %s is updated: all %d nodes run %s\n", f.name, f.total, target)
		return FollowUpdated, nil
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

// Driving is DrivePool running beside Follow.
type Driving struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once DrivePool has returned (and released the Lease)
	err    error
}

// StartDriving runs DrivePool on pool in the background, until Stop or ctx ends.
func StartDriving(ctx context.Context, c *kube.Clients, pool string, opts DriveOptions, report func(DriveReport)) *Driving {
	ctx, cancel := context.WithCancel(ctx)
	d := &Driving{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		_, d.err = DrivePool(ctx, c, pool, opts, report)
	}()
	return d
}

// Stop ends the driving and waits until the Lease is released.
func (d *Driving) Stop() {
	d.cancel()
	<-d.done
}
