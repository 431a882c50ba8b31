package controller

import (
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// ownWriteTTL is how long a write whose outcome is unknown (a timeout, a dropped
// connection) is assumed to have landed when the cache never shows the object move on:
// the ReplicaSet controller's ExpectationsTimeout. A write that answered is never
// expired this way: the cache is bound to show it, or a later version, eventually.
const ownWriteTTL = 5 * time.Minute

// ownWrites is the driver's expectations record (as the ReplicaSet controller's
// ControllerExpectations, but per object and exact): for each object it wrote, the
// resourceVersion it wrote over and the object the API server answered with. Every
// write carries the resourceVersion it was decided on as a precondition, so the
// version that follows it is the write itself: while the cache still has the version
// written over, the cache lags and the written object is what is true; once the cache
// has any other version, it has the write or something later, and the record is
// dropped. No ordering of resourceVersions is assumed.
//
// This is what lets the drivers plan from informers: a node targeted a moment ago
// counts as unavailable although the cache does not show its target yet, so
// maxUnavailable holds however far the cache lags.
type ownWrites[T metav1.Object] struct {
	clock clock.PassiveClock

	mu sync.Mutex
	by map[string]ownWrite[T]
}

type ownWrite[T metav1.Object] struct {
	before  []string // the resourceVersions that precede written: what it was written over, and so on back to what the cache had
	written T        // what the API server answered, or what was assumed
	expires time.Time
}

func newOwnWrites[T metav1.Object](clk clock.PassiveClock) *ownWrites[T] {
	return &ownWrites[T]{clock: clk, by: map[string]ownWrite[T]{}}
}

// wrote records that obj was written over resourceVersion over and the API server
// answered with written.
func (w *ownWrites[T]) wrote(over string, written T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by[written.GetName()] = ownWrite[T]{before: w.chain(written.GetName(), over), written: written}
}

// chain is the versions that precede a write of name over over: over, and, when over
// is the driver's own last write, what preceded that one.
func (w *ownWrites[T]) chain(name, over string) []string {
	e, ok := w.by[name]
	if ok && e.written.GetResourceVersion() == over {
		return append(slices.Clip(e.before), over)
	}
	return []string{over}
}

// assume records a write over resourceVersion over whose outcome is unknown: assumed
// is what the object would be had it landed. It is believed until the cache moves on
// or ownWriteTTL passes.
func (w *ownWrites[T]) assume(over string, assumed T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by[assumed.GetName()] = ownWrite[T]{before: w.chain(assumed.GetName(), over), written: assumed, expires: w.clock.Now().Add(ownWriteTTL)}
}

// forget drops the record of a write that did not land, when the record is still the
// one made for it (assumed is what assume was given): a later write's record stays.
func (w *ownWrites[T]) forget(assumed T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := assumed.GetName()
	if e, ok := w.by[name]; ok && metav1.Object(e.written) == metav1.Object(assumed) {
		delete(w.by, name)
	}
}

// latest is cached, or the driver's own write of it when the cache has not shown that
// write yet.
func (w *ownWrites[T]) latest(cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latestLocked(cached)
}

// latestAll replaces each of objs by latest's answer, under one lock: a sync reads
// thousands of nodes.
func (w *ownWrites[T]) latestAll(objs []T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.by) == 0 {
		return
	}
	for i, o := range objs {
		objs[i] = w.latestLocked(o)
	}
}

// latestLocked is latest with w.mu held.
func (w *ownWrites[T]) latestLocked(cached T) T {
	if len(w.by) == 0 {
		return cached
	}
	name := cached.GetName()
	e, ok := w.by[name]
	switch {
	case !ok:
		return cached
	case !slices.Contains(e.before, cached.GetResourceVersion()):
		delete(w.by, name) // the cache has the write, or a later version
		return cached
	case !e.expires.IsZero() && !w.clock.Now().Before(e.expires):
		delete(w.by, name)
		return cached
	}
	return e.written
}

// pending is how many writes the cache has not shown yet, for tests and logs.
func (w *ownWrites[T]) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.by)
}
