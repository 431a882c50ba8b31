package controller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// maxRequeues is how often a key that keeps failing is retried with backoff before it
// is dropped; an informer event or the periodic resync brings it back.
const maxRequeues = 15

// loop is one control loop: a rate-limited queue of object names and the function that
// syncs one of them. A name is never synced by two workers at once.
type loop struct {
	name  string
	queue workqueue.TypedRateLimitingInterface[string]
	sync  func(ctx context.Context, key string) error
	log   *slog.Logger
	// paced, when set, keeps a key from being synced again sooner than its last sync
	// took (see next). notBefore holds when each key may run again.
	paced     bool
	mu        sync.Mutex
	notBefore map[string]time.Time
}

// pace makes l a paced loop and returns it.
func (l *loop) pace() *loop {
	l.paced, l.notBefore = true, map[string]time.Time{}
	return l
}

// newLoop makes a loop whose queue reports its workqueue metrics to metrics (nil: none).
func newLoop(name string, sync func(context.Context, string) error, log *slog.Logger, metrics workqueue.MetricsProvider) *loop {
	return &loop{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: metrics},
		),
		sync: sync,
		log:  log.With("loop", name),
	}
}

func (l *loop) add(key string) { l.queue.Add(key) }

// run processes the queue with workers goroutines until ctx ends, then shuts the queue
// down and waits for every worker to finish its current key.
func (l *loop) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	l.queue.ShutDown()
	wg.Wait()
}

func (l *loop) next(ctx context.Context) bool {
	key, shutdown := l.queue.Get()
	if shutdown {
		return false
	}
	defer l.queue.Done(key)
	began := time.Now()
	if l.paced {
		// A sync whose cost grows with the pool (a rollout step reads every member:
		// ~250 ms at 5,000 nodes on a loaded machine) would otherwise run back to back
		// as long as events keep coming, each seeing one change more, and take the
		// whole core from the API server and the agents. A key runs again no sooner
		// than its last sync took: what arrives meanwhile waits in the queue and is
		// seen by one sync. At a few ms a sync (hundreds of nodes) this is no delay.
		l.mu.Lock()
		at := l.notBefore[key]
		l.mu.Unlock()
		if wait := at.Sub(began); wait > 0 {
			l.queue.AddAfter(key, wait)
			return true
		}
	}
	err := l.sync(ctx, key)
	if l.paced {
		l.mu.Lock()
		l.notBefore[key] = time.Now().Add(time.Since(began))
		l.mu.Unlock()
	}
	switch {
	case err == nil:
		l.queue.Forget(key)
	case ctx.Err() != nil:
		// Stopping: the next leader starts from the cluster's state.
	case l.queue.NumRequeues(key) < maxRequeues:
		level := slog.LevelInfo
		if apierrors.IsConflict(err) {
			level = slog.LevelDebug // another writer moved the object on: sync again on it
		}
		l.log.Log(ctx, level, "sync failed; retrying", "key", key, "err", err, "took", time.Since(began))
		l.queue.AddRateLimited(key)
	default:
		l.log.Error("sync failed too often; dropping until the next change", "key", key, "err", err)
		l.queue.Forget(key)
	}
	return true
}

// handler enqueues the keys that keys returns for an informer's added, updated and
// deleted objects. Updates that change nothing (the informer's periodic resync) are
// passed to keys as well: resyncs are how a dropped key comes back.
func handler[T any](keys func(old, cur T) []string, add func(string)) cache.ResourceEventHandler {
	var zero T
	enqueue := func(old, cur T) {
		for _, k := range keys(old, cur) {
			add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				enqueue(zero, o)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(T)
			n, ok2 := newObj.(T)
			if ok1 && ok2 {
				enqueue(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(T); ok {
				enqueue(zero, o)
			}
		},
	}
}
