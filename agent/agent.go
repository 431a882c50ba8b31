package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

// Defaults of Config's tunables.
const (
	DefaultDrainTimeout = time.Hour
	DefaultMinBackoff   = 5 * time.Second
	// DefaultStageProgressEvery: a download's progress at most every 5 s, a write of
	// the Node and one of its MachineConfigNode each time.
	DefaultStageProgressEvery = 5 * time.Second
	DefaultMaxBackoff         = 60 * time.Second
	// resync is how often an idle agent looks at its node even when told of no change,
	// in case a watch event was lost.
	resync = 10 * time.Minute
)

// Config is everything an Agent uses, injected.
type Config struct {
	Node    string
	Cluster Cluster
	Journal *store.Journal

	Root    *host.Root
	Systemd Systemd
	Logind  Rebooter
	OS      OSUpdater
	// UnitLog reads a unit's journal, to say why a post-config action failed; nil says
	// that it was not read.
	UnitLog UnitLogger
	// StateDir holds the journal's companions: snapshots and original backups.
	StateDir string
	// BootIDFile is read to tell whether the node rebooted (host.BootIDPath).
	BootIDFile string
	// CmdlineFile is the kernel command line the node booted with (/proc/cmdline),
	// checked against the config's kernel arguments before an update is declared done.
	// The kernel's command line is the same in every mount namespace, so the agent's
	// own /proc/cmdline serves under --root too. Empty: not checked (the demo's
	// simulated hosts boot no kernel).
	CmdlineFile string
	// Arch is the node's architecture as GOARCH names it (64k-pages kernels exist only
	// on arm64); empty is the agent's own.
	Arch string
	// Limits bound the decoded size of one file and of a whole config; a config over
	// them is refused before anything is written. Zero fields are the defaults
	// (ignconfig.DefaultLimits).
	Limits ignconfig.Limits

	// DrainTimeout is how long a drain may be blocked before NodeDegraded says so; the
	// drain goes on after it.
	DrainTimeout time.Duration
	// BootCheckTimeout is how long, after the boot into a new OS deployment, the agent
	// waits for the units the config requires to start before it judges them by what
	// they are then (default DefaultBootCheckTimeout).
	BootCheckTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before an update that failed is tried
	// again (doubling from min to max, as MCO's 5s..60s).
	MinBackoff, MaxBackoff time.Duration

	// StageProgressEvery bounds how often the agent publishes the progress of an OS
	// image download it stages (nodeanno.StageProgressKey and the
	// ImagePulledFromRegistry condition): at most once per interval, the latest
	// always. Zero is DefaultStageProgressEvery.
	StageProgressEvery time.Duration

	// MCOPresent reports whether OpenShift's Machine Config Operator manages this
	// cluster, and what shows it (kube.DetectMCO), in which case the agent refuses to
	// start. Nil means it is not checked.
	MCOPresent func(ctx context.Context) (found bool, evidence string, err error)

	Metrics *Metrics
	// Health, when set, is told when the agent has reached the API server and runs
	// (its /readyz).
	Health *Health
	Log    *slog.Logger
	Now    func() time.Time

	// Failpoint is the name of a failpoint (failpoint.go) at which the agent crashes, in
	// a build with the failpoints tag only; Crash does the crashing: SIGKILL to itself,
	// or, with FailpointAnnounce, a line on that file and a wait forever for the power
	// to be cut, unless a test says otherwise.
	Failpoint         string
	FailpointAnnounce string
	Crash             func(name string)
}

// Agent runs the updates of one node.
type Agent struct {
	cfg Config
	ap  *applier
	log *slog.Logger

	// evictions counts the pods this process evicted, for the during-drain failpoint.
	evictions atomic.Int32

	// reported is set once an idle node's conditions have been written by this process.
	reported bool

	driftMu sync.Mutex
	drift   *driftMonitor
	// stage is the background download of the next OS image (stage.go).
	stage stager
	// configs caches rendered configs by name; they never change once rendered.
	configs map[string]configdiff.Config
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Node == "":
		return nil, errors.New("agent: no node name (--node or NODE_NAME)")
	case cfg.Cluster == nil || cfg.Journal == nil || cfg.Root == nil || cfg.Systemd == nil || cfg.Logind == nil || cfg.OS == nil:
		return nil, errors.New("agent: Cluster, Journal, Root, Systemd, Logind and OS are all required")
	case cfg.StateDir == "":
		return nil, errors.New("agent: no state directory")
	}
	if err := CheckFailpoint(cfg.Failpoint); err != nil {
		return nil, err
	}
	if cfg.BootIDFile == "" {
		cfg.BootIDFile = host.BootIDPath
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.BootCheckTimeout <= 0 {
		cfg.BootCheckTimeout = DefaultBootCheckTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.StageProgressEvery <= 0 {
		cfg.StageProgressEvery = DefaultStageProgressEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.Crash != nil:
	case cfg.FailpointAnnounce != "":
		cfg.Crash = announcer(cfg.FailpointAnnounce)
	default:
		cfg.Crash = crash
	}
	a := &Agent{cfg: cfg, log: cfg.Log.With("node", cfg.Node), configs: map[string]configdiff.Config{}}
	cfg.Limits = cfg.Limits.OrDefault()
	if cfg.Arch == "" {
		cfg.Arch = runtime.GOARCH
	}
	a.ap = &applier{root: cfg.Root, systemd: cfg.Systemd, os: cfg.OS, stateDir: cfg.StateDir, limits: cfg.Limits,
		cmdline: cfg.CmdlineFile, arch: cfg.Arch, own: ownPaths(cfg.StateDir, cfg.Journal.Path())}
	a.ap.log = a.log.Warn
	a.armWritePoint()
	return a, nil
}

// ErrMCOPresent is returned by Run on a cluster that MCO manages.
var ErrMCOPresent = errors.New("the Machine Config Operator runs on this cluster: it already updates the nodes, " +
	"and two agents on one node would fight. Use mcotui there to observe and steer MCO (the TUI, status, rollout, pause), " +
	"and remove the mcotui agent DaemonSet")

// Run updates the node until ctx ends. It returns nil when ctx ends, and an error only
// when the agent cannot work at all (MCO runs the cluster, the journal is damaged).
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.MCOPresent != nil {
		found, evidence, err := a.cfg.MCOPresent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while checking: nothing was done
			}
			return fmt.Errorf("check whether the Machine Config Operator runs on the cluster: %w", err)
		}
		if found {
			return fmt.Errorf("%w (found %s)", ErrMCOPresent, evidence)
		}
	}
	a.cfg.Health.APIReached()
	defer a.stopDrift()
	defer a.stopStage()
	a.sweep()
	backoff := a.cfg.MinBackoff
	// failures counts the syncs failed in a row, published with the next try's time
	// (nodeanno.RetryKey) and removed once a sync succeeds; unchecked says the node may
	// still carry a retry an earlier process published.
	failures, unchecked := 0, true
	for {
		again, err := a.sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			// The journal cannot be trusted: the agent stops, and says so on the node
			// first, since nothing else will.
			a.reportJournal(ctx, err)
			return err
		}
		if store.IsHostWriteError(err) {
			// The agent cannot record its work (the journal, the layout, snapshots:
			// the state filesystem is full or read-only): the node must not look
			// healthy, or Updated, while it waits for space. Retried below.
			a.reportJournal(ctx, err)
		}
		if err == nil && (failures > 0 || unchecked) && a.clearRetry(ctx, failures > 0) {
			failures, unchecked = 0, false
		}
		if again && err == nil {
			backoff = a.cfg.MinBackoff
			continue
		}
		if err != nil {
			failures++
			a.publishRetry(ctx, failures, backoff)
			a.log.Error("sync failed; retrying", "in", backoff, "attempt", failures, "err", err)
			if a.waitRetry(ctx, backoff) {
				backoff = a.cfg.MinBackoff
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(2*backoff, a.cfg.MaxBackoff)
			continue
		}
		backoff = a.cfg.MinBackoff
		select {
		case <-ctx.Done():
			return nil
		case <-a.cfg.Cluster.Changes():
		case <-time.After(resync):
		}
	}
}

// reportJournal reports a journal the agent cannot use as the node's degraded state,
// against the node's desired config. Best effort: the API server may be unreachable too.
func (a *Agent) reportJournal(ctx context.Context, err error) {
	if err := ReportJournalError(ctx, a.cfg.Cluster, a.cfg.Node, err); err != nil {
		a.log.Warn("cannot report the journal's state to the cluster", "err", err)
	}
}

// ReportJournalError tells the cluster that node's agent cannot use its journal (damaged,
// another node's, unwritable): NodeDegraded with err, which names the file and the
// recovery, the node's state annotation Degraded, and an event. The agent's command
// calls it when the journal does not open, before it exits.
func ReportJournalError(ctx context.Context, c Cluster, node string, err error) error {
	n, gerr := c.Node(ctx)
	if gerr != nil {
		return fmt.Errorf("get node %s: %w", node, gerr)
	}
	desired := nodeanno.Desired(n)
	if desired == "" {
		desired = nodeanno.Current(n)
	}
	c.Event(corev1.EventTypeWarning, "StateUnusable", err.Error())
	if serr := c.SetConditions(ctx, desired, phase.Degraded(node, err)); serr != nil {
		return serr
	}
	return c.Annotate(ctx, map[string]string{
		nodeanno.StateKey:  nodeanno.StateDegraded,
		nodeanno.ReasonKey: truncateReason(err.Error()),
	})
}

// publishRetry tells the node's readers that try attempt failed and the next one is due
// in wait. A failure to write it is only logged: the retry happens either way.
func (a *Agent) publishRetry(ctx context.Context, attempt int, wait time.Duration) {
	r := nodeanno.Retry{Attempt: attempt, Next: a.cfg.Now().Add(wait)}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.RetryKey: r.String()}); err != nil {
		a.log.Warn("cannot publish the retry", "err", err)
	}
}

// clearRetry removes a published retry once a try succeeded, and reports whether the
// node carries none now. Unless ours (this process published one, which the agent's
// cache may not show yet), it looks at the cached node first, so that a node without
// one costs no write.
func (a *Agent) clearRetry(ctx context.Context, ours bool) bool {
	if !ours {
		node, err := a.cfg.Cluster.Node(ctx)
		if err != nil {
			return false
		}
		if _, ok := node.Annotations[nodeanno.RetryKey]; !ok {
			return true
		}
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.RetryKey: ""}); err != nil {
		a.log.Warn("cannot remove the retry", "err", err)
		return false
	}
	return true
}

// waitRetry waits out a failed sync's backoff. It returns early, with requested true,
// when someone asks for a retry: the node's state annotation set back to Working (what
// the TUI's retry writes, and `kubectl annotate` can) after the agent reported the
// failure. Other changes to the node do not end the wait: the agent's own writes would
// otherwise wake it at once and turn the backoff into a busy loop.
func (a *Agent) waitRetry(ctx context.Context, backoff time.Duration) (requested bool) {
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	// Only a move to Working from another state is a request. A failure that reported
	// nothing (the API server unreachable) leaves Working as it was, and must not turn
	// every change to the node into an immediate retry; a cache that does not yet show
	// the agent's own Degraded must not either.
	armed := false
	look := func() bool {
		node, err := a.cfg.Cluster.Node(ctx)
		if err != nil {
			return false
		}
		if nodeanno.State(node) != nodeanno.StateWorking {
			armed = true
			return false
		}
		return armed
	}
	look()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		case <-a.cfg.Cluster.Changes():
			if look() {
				a.log.Info("retry requested on the node; retrying now")
				a.cfg.Cluster.Event(corev1.EventTypeNormal, "RetryRequested", "Node "+a.cfg.Node+": retry requested (state set to "+nodeanno.StateWorking+"); retrying the update now")
				return true
			}
		}
	}
}

// sync does one round: resume the active update, or start one if the node's desired
// config differs from its current one, or watch for drift. again says to sync again at
// once (an update just ended and the desired config may have moved on).
func (a *Agent) sync(ctx context.Context) (again bool, err error) {
	u, active, err := a.cfg.Journal.Active()
	if err != nil {
		return false, err
	}
	if active {
		a.stopDrift()
		a.stopStage()
		return true, a.carry(ctx, u)
	}
	node, err := a.cfg.Cluster.Node(ctx)
	if err != nil {
		return false, fmt.Errorf("get node %s: %w", a.cfg.Node, err)
	}
	a.publishKargsMethod(ctx, node)
	current, desired := nodeanno.Current(node), nodeanno.Desired(node)
	last, haveLast, err := a.lastFinished()
	if err != nil {
		return false, err
	}
	// The journal knows better than a Node read from a cache that may not yet show the
	// agent's own last write (MCO's on-disk currentconfig overrides the annotation the
	// same way): an update journaled Done is the node's current config.
	if haveLast && last.Result == store.ResultDone && last.To == desired {
		current = desired
	}
	// A node born with its config (the config server's first-boot files) starts from it.
	if current == "" && !haveLast {
		if born, err := a.bornWith(); err != nil {
			a.log.Warn("cannot read the config the node was born with", "err", err)
		} else if born != "" {
			if handled, again, err := a.adoptBorn(ctx, node, born, desired); handled {
				return again, err
			}
		}
	} else if current != "" {
		a.retireBorn()
	}
	if desired == "" || desired == current {
		// The node's own state first: a new process says Updated before a staging it
		// starts can say the image is staged (whoever waits for staged-image then
		// finds the node Updated, not "not yet entered the Updated phase").
		err := a.idle(ctx, node, current)
		a.syncStage(ctx, node, current)
		return false, err
	}
	if haveLast && last.Result == store.ResultUnreconcilable && last.To == desired && last.From == current {
		return false, nil // already reported; wait for a new desired config
	}
	if haveLast && last.Result == store.ResultFailed && last.To == desired && last.From == current && bootFailed(last) {
		// The new OS booted unhealthy and was rolled back: trying again would boot it
		// again. Reported; wait for a new desired config.
		return false, nil
	}
	a.stopDrift()
	a.stopStage()
	return true, a.begin(ctx, node, current, desired)
}

func (a *Agent) lastFinished() (store.Update, bool, error) {
	all, err := a.cfg.Journal.List()
	if err != nil || len(all) == 0 {
		return store.Update{}, false, err
	}
	return all[len(all)-1], true, nil
}

// idle keeps a node that runs its desired config watched for drift, and says Done once.
func (a *Agent) idle(ctx context.Context, node *corev1.Node, current string) error {
	a.cfg.Metrics.setPhase(phaseIdle)
	// A failed update leaves the node cordoned, as MCO does, for its retry; if the
	// desired config went back to the current one instead, nothing will uncordon it but
	// this. Only the agent's own cordon is undone.
	if node.Spec.Unschedulable && nodeanno.CordonedBy(node) == nodeanno.CordonedByAgent {
		if err := a.cfg.Cluster.Uncordon(ctx); err != nil {
			return err
		}
	}
	if current == "" {
		return nil
	}
	state := nodeanno.State(node)
	drifted, err := a.startDrift(ctx, current)
	if err != nil {
		return err
	}
	if drifted {
		return nil
	}
	toDone := state != nodeanno.StateDone && state != nodeanno.StateUnreconcilable
	if toDone {
		a.reported = false
	}
	// Once per process, and after a state change: the MachineConfigNode is created if
	// missing, and says the node is up to date. The conditions first, the annotation
	// that sums them up last, as degrade does: whoever sees Done sees NodeDegraded False.
	if !a.reported {
		if err := a.cfg.Cluster.SetConditions(ctx, current, phase.UpToDate(a.cfg.Node), phase.NotDegraded(a.cfg.Node)); err != nil {
			return err
		}
		a.reported = true
	}
	if toDone {
		if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: ""}); err != nil {
			a.reported = false
			return err
		}
	}
	return nil
}

// config fetches a rendered config by name, once.
func (a *Agent) config(ctx context.Context, name string) (configdiff.Config, error) {
	if c, ok := a.configs[name]; ok {
		return c, nil
	}
	mc, err := a.cfg.Cluster.MachineConfig(ctx, name)
	if err != nil {
		return configdiff.Config{}, fmt.Errorf("get rendered MachineConfig %s: %w", name, err)
	}
	c, err := configdiff.FromMachineConfig(mc)
	if err != nil {
		return configdiff.Config{}, err
	}
	a.configs[name] = c
	return c, nil
}

// sweep removes the snapshots of updates that are no longer active, left by a crash
// between the end of an update in the journal and their removal.
func (a *Agent) sweep() {
	u, active, err := a.cfg.Journal.Active()
	if err != nil {
		return
	}
	entries, _ := os.ReadDir(filepath.Join(a.cfg.StateDir, "updates"))
	for _, e := range entries {
		if id, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && (!active || id != u.ID) {
			a.cleanup(id)
		}
	}
}

func (a *Agent) bootID() (string, error) { return host.BootID(a.cfg.BootIDFile) }
