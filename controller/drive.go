package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// DefaultDriveInterval is how often a drive (DriveSession.Drive) looks at its pool again when no change
// of it, its nodes or their MachineConfigNodes has made it look sooner.
const DefaultDriveInterval = time.Second

// A drive's leader election timing by default (see DriveOptions).
const (
	driveLeaseDuration = 15 * time.Second
	driveRenewDeadline = 10 * time.Second
	driveRetryPeriod   = 2 * time.Second
)

// DriveOptions configure a DriveSession. Identity is required.
type DriveOptions struct {
	// Identity names the driver in the Lease and, as field manager, in the managedFields
	// of what it writes: "mcotui-tui@bastion:4242", "mcotui-rollout@ci-runner-7:77". It
	// must differ between processes (hence the process id), or two could lead at once.
	Identity string
	// Namespace and LeaseName locate the controller's Lease. Defaults install.Namespace
	// and install.LeaseName.
	Namespace, LeaseName string
	// Leader election timing, client-go's meaning. Defaults 15 s, 10 s and 2 s
	// (client-go's examples), shorter than the controller's: a terminal's drive is
	// short, and a controller waiting on the Lease of a TUI that was killed takes over
	// within 15 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Interval is how often the pool is looked at again without a change (changes are
	// acted on as their watch events arrive). Default DefaultDriveInterval.
	Interval time.Duration
	// Clock times the pool's status conditions and the check of the Lease. Default:
	// the real clock.
	Clock clock.PassiveClock
	// Logger receives the driver's log. Default: discard.
	Logger *slog.Logger
	// Alerts is the Prometheus the pool's alert gate asks (see driverOptions.Alerts).
	Alerts kube.AlertSource
}

// DriveEnd says why a drive stopped.
type DriveEnd string

// Why a drive stops.
const (
	// DriveUpdated: every node of the pool is Done at the pool's target.
	DriveUpdated DriveEnd = "updated"
	// DrivePaused: the pool is paused; it gets no new targets until it is resumed.
	DrivePaused DriveEnd = "paused"
	// DriveDegraded: a node failed its update to the pool's target.
	DriveDegraded DriveEnd = "degraded"
	// DriveStopped: ctx ended (the user stopped it, or the command's time ran out).
	DriveStopped DriveEnd = "stopped"
)

// DriveReport is what a drive tells its caller as it goes.
type DriveReport struct {
	// Leading is true from the report that says the Lease is held on.
	Leading bool
	// Step is a step just carried out: Step.Targets got the pool's target.
	Step rollout.Step
	// End is set on the last report, with Message saying why in a sentence.
	End     DriveEnd
	Message string
	// Err is a failure the drive goes on after (a write that conflicted, a read that
	// failed); it tries again at the next look.
	Err error
}

// ErrLeaseHeld is returned by a drive when another process holds the Lease: a
// controller (or another terminal) drives the cluster, and the caller must not.
var ErrLeaseHeld = errors.New("the lease is held")

// DriveSession is one process's drive of pool rollouts on the controller's Lease, for
// as long as its context lasts: what a process that is not the controller (the TUI,
// `mcotui rollout --wait`) drives with, one pool at a time or several at once, under
// one identity. Drive drives in the caller's goroutine, Start in the background; Wait
// waits for every drive to end and release the Lease.
type DriveSession struct {
	ctx     context.Context // ends when the session's owner does
	clients *kube.Clients
	opts    DriveOptions

	// The TUI calls Drive on a goroutine of its own, which may start after the
	// program has ended and Wait has begun: mu orders each drive's running.Add before
	// Wait's running.Wait, and closed refuses a drive that comes later, which Wait
	// would not wait for.
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// NewDriveSession returns a session whose drives end when ctx does. opts.Identity is
// required (Drive refuses without one); the rest default as DriveOptions says.
func NewDriveSession(ctx context.Context, clients *kube.Clients, opts DriveOptions) *DriveSession {
	if opts.Namespace == "" {
		opts.Namespace = install.Namespace
	}
	if opts.LeaseName == "" {
		opts.LeaseName = install.LeaseName
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultDriveInterval
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = driveLeaseDuration
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = driveRenewDeadline
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = driveRetryPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &DriveSession{ctx: ctx, clients: clients, opts: opts}
}

// Identity is who the session drives as, in the Lease and the nodes' managedFields.
func (s *DriveSession) Identity() string { return s.opts.Identity }

// Lease is the namespace/name of the Lease the session drives on.
func (s *DriveSession) Lease() string { return s.opts.Namespace + "/" + s.opts.LeaseName }

// Holder is who holds the session's Lease now (kube.LeaseHolder).
//
// A Lease that cannot exist, its namespace missing, is an error: a drive would be
// confirmed and then fail to take it. (A namespace the caller may not read is not: the
// drive will say.)
func (s *DriveSession) Holder(ctx context.Context) (holder string, held bool, err error) {
	holder, held, err = kube.LeaseHolder(ctx, s.clients.Kube, s.opts.Namespace, s.opts.LeaseName, s.opts.Clock.Now())
	if err != nil || held || holder != "" {
		return holder, held, err
	}
	if _, err := s.clients.Kube.CoreV1().Namespaces().Get(ctx, s.opts.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("namespace %s does not exist, so no Lease can be taken in it: install mcotui's controller there (mcotui install), or give the namespace it runs in", s.opts.Namespace)
	}
	return "", false, nil
}

// Wait waits until every drive has ended and released the Lease, and refuses any drive
// after it; the session's context must have ended first.
func (s *DriveSession) Wait() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.running.Wait()
}

// Start drives pool in the background (Drive) until it ends, or ctx or the session's
// context does; done receives Drive's error once, when it has returned and the Lease
// is released.
func (s *DriveSession) Start(ctx context.Context, pool string, report func(DriveReport)) (done <-chan error) {
	ch := make(chan error, 1)
	go func() {
		_, err := s.Drive(ctx, pool, report)
		ch <- err
	}()
	return ch
}

// Drive drives one pool's rollout as the controller's rollout loop would, for as long
// as nobody else does: on a cluster where neither MCO nor a controller runs, the TUI
// and `mcotui rollout --wait` drive while they are open. It refuses after Wait.
//
// It refuses where MCO runs (ErrMCOPresent) and when the controller's Lease is held by
// someone else (ErrLeaseHeld, naming the holder). Otherwise it takes that Lease (kube.Lead),
// so that a controller or another terminal starting meanwhile waits, and while it
// holds it, it syncs the pool as the controller would (driver.Sync, from informers
// of its own, woken by the controller's own watch: rolloutInformers.watch) on every
// change that may concern it, and every Interval besides: the UpdateInProgress taints,
// the pool's status and the driver's next step. It stops when every node is Done at
// the pool's target (DriveUpdated), the pool is paused (DrivePaused), a node failed
// its update to the target (DriveDegraded), or ctx or the session's context ends
// (DriveStopped); then it releases the Lease, so that a controller started later takes
// over. report, when not nil, is called from Drive's goroutine: once the Lease is
// held, after each step with targets, on each failure it goes on after, and once at
// the end.
func (s *DriveSession) Drive(ctx context.Context, pool string, report func(DriveReport)) (DriveEnd, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", fmt.Errorf("drive pool %s: the session has ended; nothing was driven", pool)
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	opts := s.opts
	opts.Logger = opts.Logger.With("drive", pool)
	return drivePool(ctx, s.clients, pool, opts, report)
}

// drivePool is Drive with its options defaulted.
func drivePool(ctx context.Context, clients *kube.Clients, pool string, opts DriveOptions, report func(DriveReport)) (DriveEnd, error) {
	if opts.Identity == "" {
		return "", errors.New("drive pool " + pool + ": no identity for the lease")
	}
	if report == nil {
		report = func(DriveReport) {}
	}
	found, evidence, err := kube.DetectMCO(ctx, clients.Kube)
	if err != nil {
		return "", fmt.Errorf("drive pool %s: %w", pool, err)
	}
	if found {
		return "", fmt.Errorf("drive pool %s: %s: it drives the rollouts there", pool, evidence)
	}
	// client-go's elector retries a Lease it cannot create for ever, in silence: a
	// missing namespace is said at once instead. Without the right to read namespaces,
	// the Lease's own errors will have to do.
	if _, err := clients.Kube.CoreV1().Namespaces().Get(ctx, opts.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "", fmt.Errorf("drive pool %s: the namespace %s of the lease %s does not exist: install mcotui (mcotui install | kubectl apply -f -), or name the namespace mcotui's controller runs in", pool, opts.Namespace, opts.LeaseName)
	}
	holder, held, err := kube.LeaseHolder(ctx, clients.Kube, opts.Namespace, opts.LeaseName, opts.Clock.Now())
	if err != nil {
		return "", fmt.Errorf("drive pool %s: %w", pool, err)
	}
	// Held by anyone, this identity included: two processes under one identity would
	// both believe they lead.
	if held {
		return "", fmt.Errorf("drive pool %s: %w by %s (%s/%s): it drives the rollout", pool, ErrLeaseHeld, holder, opts.Namespace, opts.LeaseName)
	}

	d := &poolDriver{clients: clients, pool: pool, opts: opts, report: report}
	end := DriveStopped
	err = kube.Lead(ctx, kube.Election{
		Kube: clients.Kube, Namespace: opts.Namespace, Name: opts.LeaseName, Identity: opts.Identity,
		LeaseDuration: opts.LeaseDuration, RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod,
		Logger: opts.Logger,
	}, func(ctx context.Context) error {
		report(DriveReport{Leading: true})
		var err error
		end, err = d.run(ctx)
		return err
	})
	if errors.Is(err, kube.ErrTermEnded) {
		err = nil
	}
	if err != nil {
		return end, fmt.Errorf("drive pool %s: %w", pool, err)
	}
	return end, nil
}

// poolDriver is one drive's term.
type poolDriver struct {
	*driver
	clients *kube.Clients
	pool    string
	opts    DriveOptions
	report  func(DriveReport)
}

// run watches the pool, its nodes and their MachineConfigNodes through informers and
// syncs the pool on every change that may concern it (a burst of changes is one sync),
// and every Interval besides, until it ends, or ctx does.
func (d *poolDriver) run(ctx context.Context) (DriveEnd, error) {
	ctx, cancel := context.WithCancel(ctx)
	kubeF := kubeinformers.NewSharedInformerFactory(d.clients.Kube, 0)
	mcfgF := mcfginformers.NewSharedInformerFactory(d.clients.MachineConfig, 0)
	defer func() {
		cancel() // first: Shutdown waits for the informers, which stop with ctx
		kubeF.Shutdown()
		mcfgF.Shutdown()
	}()
	w := newRolloutInformers(kubeF, mcfgF)
	// No Requeue: the driver syncs every Interval anyway, which is how a window that
	// opens or a soak that ends is seen.
	d.driver = newDriver(d.clients, driverOptions{
		FieldManager: d.opts.Identity, Logger: d.opts.Logger, Clock: d.opts.Clock,
		Nodes: w.nodes.Lister(), Pools: w.pools.Lister(), MachineConfigNodes: w.mcns.Lister(),
		Alerts: d.opts.Alerts,
	})
	// One pending wake-up at most: the changes of a burst coalesce into one sync. The
	// changes are the controller's rollout loop's (rolloutInformers.watch), of this
	// pool alone.
	wake := make(chan struct{}, 1)
	if err := w.watch(func(pool string) {
		if pool != d.pool {
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}); err != nil {
		return "", fmt.Errorf("register informer handlers: %w", err)
	}
	kubeF.Start(ctx.Done())
	mcfgF.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.synced()...) {
		d.report(DriveReport{Leading: true, End: DriveStopped, Message: "stopped driving pool " + d.pool})
		return DriveStopped, nil
	}

	tick := time.NewTicker(d.opts.Interval)
	defer tick.Stop()
	for {
		end, msg, err := d.once(ctx)
		switch {
		case ctx.Err() != nil:
			d.report(DriveReport{Leading: true, End: DriveStopped, Message: "stopped driving pool " + d.pool})
			return DriveStopped, nil
		case end != "":
			d.report(DriveReport{Leading: true, End: end, Message: msg})
			return end, nil
		case apierrors.IsNotFound(err) || errors.Is(err, rollout.ErrNoTarget):
			return "", err
		case err != nil:
			d.opts.Logger.Warn("drive", "pool", d.pool, "err", err)
			d.report(DriveReport{Leading: true, Err: err})
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-tick.C:
		}
	}
}

// once syncs the pool from the caches as the controller's rollout loop would, and says
// whether driving has ended and why.
func (d *poolDriver) once(ctx context.Context) (DriveEnd, string, error) {
	p, err := d.pools.Get(d.pool)
	if apierrors.IsNotFound(err) {
		return "", "", fmt.Errorf("machineconfigpool %s: %w", d.pool, err)
	}
	if err != nil {
		return "", "", err
	}
	target := p.Spec.Configuration.Name
	if target == "" {
		return "", "", fmt.Errorf("machineconfigpool %s has not been rendered yet (spec.configuration.name is empty): only mcotui's controller renders pools: %w", p.Name, rollout.ErrNoTarget)
	}
	if p.Spec.Paused {
		return DrivePaused, fmt.Sprintf("pool %s is paused: stopped driving it", p.Name), nil
	}
	var failed []string
	st, step, err := d.Sync(ctx, d.pool, func(st PoolState) bool {
		for _, n := range st.Nodes {
			if nodeanno.Desired(n) == target && rollout.Degraded(n) {
				failed = append(failed, fmt.Sprintf("%s (%s)", n.Name, nodeanno.Reason(n)))
			}
		}
		return len(failed) == 0
	})
	if len(step.Targets) > 0 {
		d.report(DriveReport{Leading: true, Step: step})
	}
	if len(failed) > 0 {
		return DriveDegraded, fmt.Sprintf("pool %s: stopped driving: %s failed to update to %s", p.Name, strings.Join(failed, ", "), target), nil
	}
	done := 0
	for _, n := range st.Nodes {
		if rollout.DoneAt(n, target) {
			done++
		}
	}
	// A hooked rollout is over once its after-rollout hook has succeeded (hooks.go).
	if done == len(st.Nodes) && err == nil && st.Pool != nil && !rollout.HookedRolloutOpen(st.Pool) {
		// With no error, the taints and the status written are the final ones.
		return DriveUpdated, fmt.Sprintf("pool %s is updated: all %d nodes run %s", p.Name, done, target), nil
	}
	return "", "", err
}
