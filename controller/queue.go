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
	err := l.sync(ctx, key)
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
