package model

import (
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/estimate"
)

// estimateTTL is how long a pool's estimate is kept: it moves with the nodes and the
// clock, but a screen redrawn 120 times a second during a burst of events must not
// walk the pool's nodes on each frame.
const estimateTTL = 5 * time.Second

// asyncEstimateFrom is the size from which a pool's estimate, once it has one, is
// recomputed off the program's goroutine: ordering 15,000 members for their waves
// takes some 60 ms (docs/benchmarks.md), and the frame that found the estimate aged
// paid it, with a key pressed then waiting behind it. The estimate shown meanwhile is
// the aged one, for the moment the recomputation takes.
const asyncEstimateFrom = 1000

// largeEstimateTTL is how long the estimate of a pool of asyncEstimateFrom members or
// more is kept: its recomputation, even off the program's goroutine, competes with the
// frames for the CPU and the garbage collector, and a rollout of thousands of nodes
// moves in minutes, not seconds.
const largeEstimateTTL = 30 * time.Second

type poolEstimate struct {
	at      time.Time
	est     estimate.Estimate
	nodes   map[string]estimate.Node
	rolling bool // a member is not Done (nor failed)
	// next is the recomputation under way off the program's goroutine, or nil.
	next chan *poolEstimate
}

// Estimate is the pool's remaining-time estimate at now (core/estimate: the phase times
// the controller measured on the pool, kept in its annotation, else the pace) and each
// member's place in it, for the pools' note and EST column, the node detail and the
// grid's pace line (Paces): one estimate, so that they agree. ok is false for a pool that is
// not rolling out (every member Done, or no target).
func (s *Store) Estimate(pool string, now time.Time) (est estimate.Estimate, nodes map[string]estimate.Node, ok bool) {
	p := s.pools[pool]
	if p == nil || p.Obj == nil || p.Obj.Spec.Configuration.Name == "" {
		return estimate.Estimate{}, nil, false
	}
	if s.estimates == nil {
		s.estimates = map[string]*poolEstimate{}
	}
	e := s.estimates[pool]
	if e != nil && e.next != nil {
		select {
		case fresh := <-e.next:
			e = fresh
			s.estimates[pool] = e
		default:
		}
	}
	if e != nil && e.next != nil {
		// Under way: the aged one until it lands.
		return e.est, e.nodes, e.rolling
	}
	if e == nil || now.Sub(e.at) >= e.ttl() || now.Before(e.at) {
		// Nodes are immutable once published, and so are the objects they were derived
		// from: another goroutine may read them while the store moves on.
		var members []*Node
		for _, n := range s.nodes {
			if n.Pool == pool && n.Obj != nil {
				members = append(members, n)
			}
		}
		switch {
		case e != nil && len(members) >= asyncEstimateFrom && !now.Before(e.at):
			e.next = make(chan *poolEstimate, 1)
			go func(next chan<- *poolEstimate, obj *mcfgv1.MachineConfigPool) {
				next <- computeEstimate(obj, members, now)
			}(e.next, p.Obj)
		default:
			e = computeEstimate(p.Obj, members, now)
			s.estimates[pool] = e
		}
	}
	return e.est, e.nodes, e.rolling
}

// countedState is what of a node the pool's counts (PoolCounts.add) read.
type countedState struct {
	pool                                               string
	present, updating, degraded, done, behind, waiting bool
}

func counted(n *Node) countedState {
	if n == nil {
		return countedState{}
	}
	return countedState{n.Pool, true, n.Updating, n.Degraded, n.Done(), n.Behind, n.Waiting}
}

// estimateMoved drops the pool's kept estimate when a member's counted state moved, so
// that the next frame's "N left" agrees with the pool's counts and the grid. A pool of
// asyncEstimateFrom members or more keeps its estimate until it ages: its members move
// all through a rollout, and each recomputation costs tens of milliseconds.
func (s *Store) estimateMoved(pool string) {
	if e := s.estimates[pool]; e != nil && e.next == nil && len(e.nodes) < asyncEstimateFrom {
		delete(s.estimates, pool)
	}
}

// computeEstimate is the pool's estimate at now from its members.
func computeEstimate(pool *mcfgv1.MachineConfigPool, members []*Node, now time.Time) *poolEstimate {
	objs := make([]*corev1.Node, len(members))
	mcns := make(map[string]*mcfgv1.MachineConfigNode, len(members))
	for i, n := range members {
		objs[i] = n.Obj
		if n.MCN != nil {
			mcns[n.Obj.Name] = n.MCN
		}
	}
	est, nodes := estimate.ForPool(pool, objs, func(name string) *mcfgv1.MachineConfigNode { return mcns[name] }, now)
	return &poolEstimate{at: now, est: est, nodes: nodes, rolling: est.Updating+est.Waiting > 0}
}

// ttl is how long e is kept (estimateTTL, or largeEstimateTTL for a large pool's).
func (e *poolEstimate) ttl() time.Duration {
	if len(e.nodes) >= asyncEstimateFrom {
		return largeEstimateTTL
	}
	return estimateTTL
}
