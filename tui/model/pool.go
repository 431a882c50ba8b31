package model

import (
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Pool is a MachineConfigPool as `oc get mcp` shows it, plus what the TUI counts from the
// pool's nodes.
type Pool struct {
	Name   string
	Config string // status.configuration.name: what the pool's nodes run (oc's CONFIG)
	Target string // spec.configuration.name: what the pool is rolling out

	// The Updated, Updating and Degraded conditions as "True", "False" or "" (unset),
	// exactly what oc prints.
	Updated, Updating, Degraded string

	MachineCount, ReadyCount, UpdatedCount, DegradedCount, UnavailableCount int32

	Paused         bool
	MaxUnavailable string // as written (an integer or a percentage); "1" when unset
	Created        time.Time

	Obj *mcfgv1.MachineConfigPool
}

// Progress is the fraction of the pool's machines that run the pool's config, from the
// pool's status as `oc get mcp` counts it.
func (p *Pool) Progress() float64 {
	if p.MachineCount <= 0 {
		return 0
	}
	return float64(p.UpdatedCount) / float64(p.MachineCount)
}

// StatusBehind says how the pool's status lags what the TUI sees of its nodes (live,
// the counts c): a spec the pool controller has not yet observed, a machine count that
// is not the number of nodes listed, an updated count that is not the number of nodes
// the grid shows done at the pool's target (MCO's updatedMachineCount counts the same
// nodes: current and desired config the target, not degraded, not updating), a degraded
// count that is not the number of nodes degraded now. MCO and mcotui's controller sync a pool's status after its nodes, so a
// pool a few seconds behind is normal; an operator must still not read "0 degraded"
// beside a failed node without being told the 0 is old. Empty when it agrees.
func (p *Pool) StatusBehind(c PoolCounts) []string {
	var out []string
	if p.Obj != nil && p.Obj.Generation > p.Obj.Status.ObservedGeneration {
		out = append(out, fmt.Sprintf("generation %d not yet observed (status is of %d)", p.Obj.Generation, p.Obj.Status.ObservedGeneration))
	}
	if int(p.MachineCount) != c.Nodes {
		out = append(out, fmt.Sprintf("counts %d machines, %d nodes listed", p.MachineCount, c.Nodes))
	}
	if int(p.UpdatedCount) != c.DoneNow {
		out = append(out, fmt.Sprintf("counts %d updated, %d at the target now", p.UpdatedCount, c.DoneNow))
	}
	if int(p.DegradedCount) != c.DegradedNow {
		out = append(out, fmt.Sprintf("counts %d degraded, %d now", p.DegradedCount, c.DegradedNow))
	}
	return out
}

func buildPool(obj *mcfgv1.MachineConfigPool) *Pool {
	p := &Pool{
		Name:             obj.Name,
		Config:           obj.Status.Configuration.Name,
		Target:           obj.Spec.Configuration.Name,
		MachineCount:     obj.Status.MachineCount,
		ReadyCount:       obj.Status.ReadyMachineCount,
		UpdatedCount:     obj.Status.UpdatedMachineCount,
		DegradedCount:    obj.Status.DegradedMachineCount,
		UnavailableCount: obj.Status.UnavailableMachineCount,
		Paused:           obj.Spec.Paused,
		MaxUnavailable:   "1",
		Created:          obj.CreationTimestamp.Time,
		Obj:              obj,
	}
	if mu := obj.Spec.MaxUnavailable; mu != nil {
		p.MaxUnavailable = mu.String()
	}
	for _, c := range obj.Status.Conditions {
		switch c.Type {
		case mcfgv1.MachineConfigPoolUpdated:
			p.Updated = string(c.Status)
		case mcfgv1.MachineConfigPoolUpdating:
			p.Updating = string(c.Status)
		case mcfgv1.MachineConfigPoolDegraded:
			p.Degraded = string(c.Status)
		}
	}
	return p
}
