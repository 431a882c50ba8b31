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

type poolEstimate struct {
	at      time.Time
	est     estimate.Estimate
	nodes   map[string]estimate.Node
	rolling bool // a member is not Done (nor failed)
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
	if e == nil || now.Sub(e.at) >= estimateTTL || now.Before(e.at) {
		var members []*corev1.Node
		for _, n := range s.nodes {
			if n.Pool == pool && n.Obj != nil {
				members = append(members, n.Obj)
			}
		}
		est, nodes := estimate.ForPool(p.Obj, members, func(name string) *mcfgv1.MachineConfigNode { return s.mcns[name] }, now)
		e = &poolEstimate{at: now, est: est, nodes: nodes, rolling: est.Updating+est.Waiting > 0}
		s.estimates[pool] = e
	}
	return e.est, e.nodes, e.rolling
}
