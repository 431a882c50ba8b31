// Package demo runs a simulated cluster for `mcotui demo`: the real controller and one
// real agent per node, against an API server the caller provides, with the nodes' hosts,
// kubelets and workload controllers simulated (sim/hostsim and this package),
// and a story played on it: a config rolled out to the workers, a node degrading and
// recovering, a second config that drains and reboots every node, and a boot image mode
// change; meanwhile the pools' OS images are built on the cluster (image mode, with MCO's
// build controller played by ImageBuilds). Timings are a real cluster's, compressed by Options.Speed.
//
// It lives here rather than in tui because the TUI must not import the agent or the
// controller; the command hands the TUI the same API server.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube"
)

// Defaults and limits of Options.
const (
	DefaultNodes = 12
	// MinNodes is three masters and two workers: with maxUnavailable 2 and one worker
	// degraded, the other must still be able to update.
	MinNodes = 5
	// MaxAgents is how many nodes run a real agent, each with its own informers,
	// journal and simulated host: more would not keep a laptop responsive. The workers
	// past it are played by a light stand-in (see StandInLabel).
	MaxAgents = 60
	// MaxNodes is as many nodes as the TUI is built for; past MaxAgents they are
	// stand-ins.
	MaxNodes = 10000
	MinSpeed = 0.1
	MaxSpeed = 100.0
	masters  = 3
)

// Options configures Start.
type Options struct {
	// Config reaches the API server the simulated cluster lives in, which must serve the
	// MachineConfig, operator and Machine API CRDs and nothing of an existing cluster.
	Config *rest.Config
	// Nodes is the number of nodes, masters included (three). Default DefaultNodes.
	Nodes int
	// Agents is how many of them run a real agent; the workers past it are stand-ins
	// (StandInLabel). Default (and at most) MaxAgents; tests lower it to exercise the
	// stand-in on a few nodes.
	Agents int
	// Speed divides every simulated duration: 2 plays the story twice as fast. Default 1.
	Speed float64
	// Seed makes the jitter of the timings, and the worker that fails, repeatable.
	Seed uint64
	// OpenShiftNames names the nodes as an OpenShift installer does on a cloud
	// (ci-ln-ds73n5t-72292-9xsm9-worker-a-xyz12: about 40 characters, all sharing a long
	// prefix) rather than master-0 and worker-0, to see the TUI on names that long.
	OpenShiftNames bool
	// Dir is where the hosts' files, journals and boot ids go; a temporary directory
	// is made (and removed by Wait) when it is empty.
	Dir string
	// Log receives the log of the controller, the agents and the story. Default: discard.
	Log *slog.Logger
	// Progress, when set, is told each step of the story as it happens (the Step
	// constants): a sentence for a newcomer watching the TUI. It is called on the
	// story's goroutine, which it must not hold up.
	Progress func(step string)
}

// Validate checks the options a user gives, with messages that name the flag. Zero is
// out of range here; Start takes it for the default.
func (o Options) Validate() error {
	var errs []error
	if o.Nodes < MinNodes || o.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("--nodes %d: use %d to %d (three masters, the rest workers; past %d, stand-ins without agents)", o.Nodes, MinNodes, MaxNodes, MaxAgents))
	}
	if !(o.Speed >= MinSpeed && o.Speed <= MaxSpeed) { // NaN too
		errs = append(errs, fmt.Errorf("--speed %g: use %g (ten times slower) to %g (a hundred times faster); 1 is a real cluster's pace, compressed", o.Speed, MinSpeed, MaxSpeed))
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() error {
	if o.Nodes == 0 {
		o.Nodes = DefaultNodes
	}
	if o.Speed == 0 {
		o.Speed = 1
	}
	if o.Agents <= 0 || o.Agents > MaxAgents {
		o.Agents = MaxAgents
	}
	o.Agents = max(o.Agents, MinNodes)
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Config == nil {
		return errors.New("demo: no API server (Options.Config)")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return nil
}

// Demo is a running simulation.
type Demo struct {
	opts    Options
	clients *kube.Clients
	dir     string
	ownDir  bool
	log     *slog.Logger

	rndMu sync.Mutex
	rnd   *rand.Rand

	nodes   []*simNode
	workers []*simNode
	// rendered are the names of the pools' first rendered configs.
	rendered []string
	kubelet  *kubelet
	// builds plays MCO's build controller; nil where MachineOSConfigs are not served.
	builds *ImageBuilds

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	storyDone chan struct{}

	errMu sync.Mutex
	err   error
}

// Start seeds the cluster (pools, configs, nodes already up to date on their rendered
// configs, workloads, boot images), starts the controller, the kubelets and the agents,
// and begins the story. It returns once the cluster is seeded and everything runs; the
// simulation goes on until ctx ends or Stop is called, and the story plays once.
func Start(ctx context.Context, opts Options) (*Demo, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	clients, err := kube.NewClients(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d := &Demo{
		opts: opts, clients: clients, dir: opts.Dir, log: opts.Log,
		rnd:       rand.New(rand.NewPCG(opts.Seed, opts.Seed+1)),
		storyDone: make(chan struct{}),
	}
	if d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "mcotui-demo-"); err != nil {
			return nil, fmt.Errorf("demo: temporary directory: %w", err)
		}
		d.ownDir = true
	}
	ctx, d.cancel = context.WithCancel(ctx)
	ok := false
	defer func() {
		if !ok {
			d.Stop()
		}
	}()
	if err := d.seed(ctx); err != nil {
		return nil, fmt.Errorf("demo: seed the cluster: %w", err)
	}
	d.goRun("controller", func() error { return d.runController(ctx) })
	d.goRun("kubelet", func() error { return d.kubelet.run(ctx) })
	if d.builds != nil {
		d.goRun("image builds", func() error { return d.builds.run(ctx, d) })
	}
	if d.opts.Nodes > d.opts.Agents {
		d.goRun("stand-in", func() error { return (&standIn{d: d}).run(ctx) })
	}
	// The agents fetch their nodes' configs at once: let the controller render them
	// first, so that the log does not open with retries.
	if err := d.until(ctx, func(ctx context.Context) (bool, error) {
		for _, name := range d.rendered {
			if _, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return nil, fmt.Errorf("demo: wait for the controller to render the pools: %w", errors.Join(err, d.failure()))
	}
	for _, n := range d.nodes {
		d.goRun("node "+n.name, func() error { return n.run(ctx) })
	}
	d.goRun("story", func() error {
		defer close(d.storyDone)
		return d.story(ctx)
	})
	ok = true
	return d, nil
}

// goRun runs f until it returns; an error other than the end of the context is kept for
// Wait and stops the simulation.
func (d *Demo) goRun(what string, f func() error) {
	d.wg.Go(func() {
		err := f()
		if err == nil || errors.Is(err, context.Canceled) {
			return
		}
		d.log.Error("demo part stopped", "part", what, "err", err)
		d.errMu.Lock()
		if d.err == nil {
			d.err = fmt.Errorf("demo: %s: %w", what, err)
		}
		d.errMu.Unlock()
		d.cancel()
	})
}

// StoryDone is closed when the story has played to its end (or stopped).
func (d *Demo) StoryDone() <-chan struct{} { return d.storyDone }

// Stop ends the simulation and waits for it; see Wait.
func (d *Demo) Stop() error {
	d.cancel()
	return d.Wait()
}

// Wait waits until the simulation has ended (its context ended, Stop, or a part
// failed), removes the temporary directory it made, and returns the first failure.
func (d *Demo) Wait() error {
	d.wg.Wait()
	if d.ownDir {
		if err := os.RemoveAll(d.dir); err != nil {
			d.log.Warn("remove the demo's directory", "dir", d.dir, "err", err)
		}
	}
	return d.failure()
}

// failure is the first failure of a part of the simulation.
func (d *Demo) failure() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

// scaled is d at the demo's speed.
func (d *Demo) scaled(x time.Duration) time.Duration {
	return time.Duration(float64(x) / d.opts.Speed)
}

// draw draws a duration in [lo, hi], for sleep.
func (d *Demo) draw(lo, hi time.Duration) time.Duration {
	d.rndMu.Lock()
	n := lo
	if hi > lo {
		n += time.Duration(d.rnd.Int64N(int64(hi - lo)))
	}
	d.rndMu.Unlock()
	return n
}

// intn draws from [0, n).
func (d *Demo) intn(n int) int {
	d.rndMu.Lock()
	defer d.rndMu.Unlock()
	return d.rnd.IntN(n)
}

// sleep waits x at the demo's speed, or until ctx ends.
func (d *Demo) sleep(ctx context.Context, x time.Duration) error {
	t := time.NewTimer(d.scaled(x))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
