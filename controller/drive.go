package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// DefaultDriveInterval is how often DrivePool looks at its pool again.
const DefaultDriveInterval = time.Second

// DriveOptions configure DrivePool. Identity is required.
type DriveOptions struct {
	// Identity names the driver in the Lease and, as field manager, in the managedFields
	// of what it writes: "mcotui-tui@bastion:4242", "mcotui-rollout@ci-runner-7:77". It
	// must differ between processes (hence the process id), or two could lead at once.
	Identity string
	// Namespace and LeaseName locate the controller's Lease. Defaults DefaultNamespace
	// and LeaseName.
	Namespace, LeaseName string
	// Leader election timing, client-go's meaning. Defaults as for Config.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Interval is how often the pool is looked at again. Default DefaultDriveInterval.
	Interval time.Duration
	// Clock times the pool's status conditions and the check of the Lease. Default:
	// the real clock.
	Clock clock.PassiveClock
	// Logger receives the driver's log. Default: discard.
	Logger *slog.Logger
}

// DriveEnd says why DrivePool stopped driving.
type DriveEnd string

// Why DrivePool stops.
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

// DriveReport is what DrivePool tells its caller as it goes.
type DriveReport struct {
	// Leading is true from the report that says the Lease is held on.
	Leading bool
	// Step is a step just carried out: Step.Targets got the pool's target.
	Step rollout.Step
	// End is set on the last report, with Message saying why in a sentence.
	End     DriveEnd
	Message string
	// Err is a failure DrivePool goes on after (a write that conflicted, a read that
	// failed); it tries again at the next look.
	Err error
}

// ErrLeaseHeld is returned by DrivePool when another process holds the Lease: a
// controller (or another terminal) drives the cluster, and the caller must not.
var ErrLeaseHeld = errors.New("the lease is held")

// DrivePool drives one pool's rollout as the controller's rollout loop would, for as
// long as nobody else does: on a cluster where neither MCO nor a controller runs, the
// TUI and `mcotui rollout --wait` call it while they are open.
//
// It refuses where MCO runs (ErrMCOPresent) and when the controller's Lease is held by
// someone else (ErrLeaseHeld, naming the holder). Otherwise it takes that Lease (Lead),
// so that a controller or another terminal starting meanwhile waits, and while it
// holds it, every Interval it reads the pool, keeps the UpdateInProgress taints and
// the pool's status as the controller would, and takes the Driver's next step. It
// stops when every node is Done at the pool's target (DriveUpdated), the pool is
// paused (DrivePaused), a node failed its update to the target (DriveDegraded), or ctx
// ends (DriveStopped); then it releases the Lease, so that a controller started later
// takes over. report, when not nil, is called from DrivePool's goroutine: once the
// Lease is held, after each step with targets, on each failure it goes on after, and
// once at the end.
func DrivePool(ctx context.Context, clients *kube.Clients, pool string, opts DriveOptions, report func(DriveReport)) (DriveEnd, error) {
	if opts.Identity == "" {
		return "", errors.New("drive pool " + pool + ": no identity for the lease")
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.LeaseName == "" {
		opts.LeaseName = LeaseName
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultDriveInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
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
	holder, held, err := LeaseHolder(ctx, clients.Kube, opts.Namespace, opts.LeaseName, opts.Clock.Now())
	if err != nil {
		return "", fmt.Errorf("drive pool %s: %w", pool, err)
	}
	// Held by anyone, this identity included: two processes under one identity would
	// both believe they lead.
	if held {
		return "", fmt.Errorf("drive pool %s: %w by %s (%s/%s): it drives the rollout", pool, ErrLeaseHeld, holder, opts.Namespace, opts.LeaseName)
	}

	d := &poolDriver{
		Driver: NewDriver(clients, DriverOptions{FieldManager: opts.Identity, Logger: opts.Logger}),
		pool:   pool, opts: opts, report: report,
	}
	end := DriveStopped
	err = Lead(ctx, Election{
		Kube: clients.Kube, Namespace: opts.Namespace, Name: opts.LeaseName, Identity: opts.Identity,
		LeaseDuration: opts.LeaseDuration, RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod,
		Logger: opts.Logger,
	}, func(ctx context.Context) error {
		report(DriveReport{Leading: true})
		var err error
		end, err = d.run(ctx)
		return err
	})
	if errors.Is(err, errTermEnded) {
		err = nil
	}
	if err != nil {
		return end, fmt.Errorf("drive pool %s: %w", pool, err)
	}
	return end, nil
}

// poolDriver is one DrivePool's term.
type poolDriver struct {
	*Driver
	pool   string
	opts   DriveOptions
	report func(DriveReport)
}

// run looks at the pool every Interval until it ends, or ctx does.
func (d *poolDriver) run(ctx context.Context) (DriveEnd, error) {
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
		case <-tick.C:
		}
	}
}

// once reads the pool and its nodes and does what the controller's rollout loop would
// do with them, and says whether driving has ended and why.
func (d *poolDriver) once(ctx context.Context) (DriveEnd, string, error) {
	st, err := d.Read(ctx, d.pool)
	if err != nil {
		return "", "", err
	}
	p := st.Pool
	target := p.Spec.Configuration.Name
	if target == "" {
		return "", "", fmt.Errorf("machineconfigpool %s has not been rendered yet (spec.configuration.name is empty): only mcotui's controller renders pools: %w", p.Name, rollout.ErrNoTarget)
	}
	if p.Spec.Paused {
		return DrivePaused, fmt.Sprintf("pool %s is paused: stopped driving it", p.Name), nil
	}
	var errs []error
	wrote, err := d.syncTaints(ctx, p, st.Nodes)
	if err != nil {
		errs = append(errs, err)
	}
	view := rollout.PlanningView(st.Nodes)
	if err := d.writeStatus(ctx, p, view, d.opts.Clock.Now()); err != nil {
		errs = append(errs, err)
	}
	var failed []string
	done := 0
	for _, n := range st.Nodes {
		if nodeanno.Desired(n) == target && rollout.Degraded(n) {
			failed = append(failed, fmt.Sprintf("%s (%s)", n.Name, nodeanno.Reason(n)))
		}
		if rollout.DoneAt(n, target) {
			done++
		}
	}
	switch {
	case len(failed) > 0:
		return DriveDegraded, fmt.Sprintf("pool %s: stopped driving: %s failed to update to %s", p.Name, strings.Join(failed, ", "), target), nil
	case done == len(st.Nodes) && len(errs) == 0:
		// With no error, the taints and the status written above are the final ones.
		return DriveUpdated, fmt.Sprintf("pool %s is updated: all %d nodes run %s", p.Name, done, target), nil
	}
	// The nodes as read are what the step decides on, unless the taints just moved
	// them on: then each target's patch would only meet a Conflict.
	var step rollout.Step
	if wrote {
		step, err = d.Step(ctx, d.pool, rollout.Options{})
	} else {
		step, err = d.stepOn(ctx, st, rollout.Options{})
	}
	if len(step.Targets) > 0 {
		d.report(DriveReport{Leading: true, Step: step})
	}
	if err != nil {
		errs = append(errs, err)
	}
	return "", "", errors.Join(errs...)
}
