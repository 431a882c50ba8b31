package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Election is a Lease to hold while doing what only one process may do at a time: the
// controller's loops, or the TUI driving a pool when no controller runs.
//
// The default timing is the controller's: OpenShift's recommended one, which
// library-go's leaderelection defaults to and MCO's controllers run with. The leader
// renews every RetryPeriod, so 26 s makes a renewal rare next to the rollout's own
// writes (client-go's 2 s was a write every 2 s, a twentieth of a 200-node rollout's);
// a leader that exits releases the Lease at once, and only a crashed one keeps its
// standby waiting, up to LeaseDuration.
type Election struct {
	Kube kubernetes.Interface
	// Namespace and Name locate the Lease; Identity names this candidate in it.
	Namespace, Name, Identity string
	// Leader election timing, client-go's meaning. Defaults DefaultLeaseDuration,
	// DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Logger receives the election's progress. Default: discard.
	Logger *slog.Logger
	// OnLeading, when set, is called with true once the Lease is held, before fn
	// starts, and with false once fn has returned, before the Lease is released.
	OnLeading func(leading bool)
}

// Election's default timing (see Election).
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// ErrTermEnded ends an election whose work returned while the Lease was still held:
// Lead returns it when fn returned nil, which a caller whose work ends on its own (a
// drive) takes as success.
var ErrTermEnded = errors.New("stopped leading")

// Lead runs for election on the Lease until ctx ends, and runs fn while it holds it,
// with a context that ends when ctx does or the Lease is lost.
//
// On the way out fn is waited for before the Lease is released (client-go's
// ReleaseOnCancel), so the next leader starts only once fn has returned; and fn never
// starts once ctx has ended. Lead returns nil when ctx ends; fn's error when fn fails
// (the Lease is released then, so another candidate can take over); and an error when
// the Lease is lost, after which a process should exit and start over, as every client-go
// controller does.
func Lead(ctx context.Context, e Election, fn func(context.Context) error) error {
	if e.LeaseDuration <= 0 {
		e.LeaseDuration = DefaultLeaseDuration
	}
	if e.RenewDeadline <= 0 {
		e.RenewDeadline = DefaultRenewDeadline
	}
	if e.RetryPeriod <= 0 {
		e.RetryPeriod = DefaultRetryPeriod
	}
	log := e.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	where := e.Namespace + "/" + e.Name
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, e.Namespace, e.Name,
		e.Kube.CoreV1(), e.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: e.Identity})
	if err != nil {
		return fmt.Errorf("lease %s: %w", where, err)
	}

	// The elector's context ends only once fn has returned, so that releasing the
	// Lease never lets a new leader start beside this one.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	var (
		mu      sync.Mutex
		running chan struct{} // closed when the current term's fn has returned
		termErr error
	)
	waitTerm := func() {
		mu.Lock()
		r := running
		mu.Unlock()
		if r != nil {
			<-r
		}
	}
	defer context.AfterFunc(ctx, func() {
		waitTerm()
		cancelElect()
	})()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            e.Name,
		LeaseDuration:   e.LeaseDuration,
		RenewDeadline:   e.RenewDeadline,
		RetryPeriod:     e.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				// client-go calls this in a goroutine of its own: by now the term may
				// be over (the Lease lost at once) or Lead on its way out.
				if ctx.Err() != nil || leadCtx.Err() != nil {
					mu.Unlock()
					return
				}
				done := make(chan struct{})
				running = done
				mu.Unlock()
				defer close(done)

				runCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				if e.OnLeading != nil {
					e.OnLeading(true)
					defer e.OnLeading(false)
				}
				log.Info("leading", "lease", where, "identity", e.Identity)
				err := fn(runCtx)
				if ctx.Err() == nil && leadCtx.Err() == nil {
					// fn returned while the Lease is held: end the election rather
					// than hold the Lease doing nothing.
					if err == nil {
						err = ErrTermEnded
					}
					mu.Lock()
					termErr = err
					mu.Unlock()
					cancelElect()
				}
			},
			OnStoppedLeading: func() { log.Info("not leading", "lease", where, "identity", e.Identity) },
			OnNewLeader: func(id string) {
				if id != e.Identity {
					log.Info("another candidate leads", "lease", where, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election on %s: %w", where, err)
	}
	log.Info("waiting for the lease", "lease", where, "identity", e.Identity)
	elector.Run(electCtx)
	waitTerm()
	releaseIfHeld(lock, e, log)

	mu.Lock()
	defer mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return nil
	case termErr != nil:
		return termErr
	}
	return fmt.Errorf("lost the lease %s", where)
}

// releaseIfHeld gives up the Lease if the record still names this candidate after the
// elector returned. client-go releases only a Lease it knows it won: when ctx ends
// while its write taking the Lease is in flight, the write can succeed on the server
// and be reported cancelled, and the Lease would stay held, by no one working, until
// it expired. Everything fn did has ended by now, so no term can overlap the next.
func releaseIfHeld(lock resourcelock.Interface, e Election, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), e.RenewDeadline)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil || rec.HolderIdentity != e.Identity {
		return
	}
	now := metav1.NewTime(time.Now())
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
	if err != nil {
		log.Warn("could not release the lease; it expires by itself", "lease", e.Namespace+"/"+e.Name, "identity", e.Identity, "err", err)
		return
	}
	log.Info("released the lease", "lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
}
