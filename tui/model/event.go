// Package model is the TUI's data: the pools, nodes and MachineConfigNodes of one
// cluster, joined by node name and reduced to what the panes draw. Sources (an informer,
// the demo simulation, a test fixture) feed it Events; the root model applies them in
// batches so that a burst of thousands of updates costs one redraw.
//
// The model owns no goroutines and no locks: it is only touched from Bubble Tea's
// Update loop. It never reads a clock of its own; times are API timestamps, and ages are
// computed by the panes from the injected clock.
package model

import (
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// Kind says which object an Event carries.
type Kind uint8

// Kinds of Event.
const (
	KindPool Kind = iota + 1
	KindNode
	KindMCN
	KindHealth
)

func (k Kind) String() string {
	switch k {
	case KindPool:
		return "MachineConfigPool"
	case KindNode:
		return "Node"
	case KindMCN:
		return "MachineConfigNode"
	case KindHealth:
		return "Health"
	}
	return "Unknown"
}

// Event is one change from a Source: an object added or updated (Deleted false) or
// removed (Deleted true), or a change of the source's connection health. It is a plain
// struct rather than an interface so that a burst of events is one slice without a
// boxed value per event.
//
// The objects are shared with the source (an informer cache) and must not be modified.
type Event struct {
	Kind    Kind
	Deleted bool
	Pool    *mcfgv1.MachineConfigPool
	Node    *corev1.Node
	MCN     *mcfgv1.MachineConfigNode
	Health  Health
}

// PoolEvent is an added or updated MachineConfigPool.
func PoolEvent(p *mcfgv1.MachineConfigPool) Event { return Event{Kind: KindPool, Pool: p} }

// NodeEvent is an added or updated Node.
func NodeEvent(n *corev1.Node) Event { return Event{Kind: KindNode, Node: n} }

// MCNEvent is an added or updated MachineConfigNode.
func MCNEvent(m *mcfgv1.MachineConfigNode) Event { return Event{Kind: KindMCN, MCN: m} }

// HealthEvent reports the source's connection health.
func HealthEvent(h Health) Event { return Event{Kind: KindHealth, Health: h} }

// Deleted is the removal of an object; only its name is read.
func Deleted(e Event) Event { e.Deleted = true; return e }

// name is the name of the object the event carries.
func (e Event) name() string {
	switch e.Kind {
	case KindPool:
		if e.Pool != nil {
			return e.Pool.Name
		}
	case KindNode:
		if e.Node != nil {
			return e.Node.Name
		}
	case KindMCN:
		if e.MCN != nil {
			return e.MCN.Name
		}
	}
	return ""
}

// Connection is the state of a source's link to its cluster.
type Connection uint8

// Connection states.
const (
	// Connecting: the source has not synced yet.
	Connecting Connection = iota
	// Connected: the watches are up and the caches synced.
	Connected
	// Degraded: the source is up but a watch is failing (Err says why) and what is shown
	// may be stale.
	Degraded
	// Disconnected: the source stopped; nothing shown will change any more.
	Disconnected
)

func (c Connection) String() string {
	return [...]string{"connecting", "connected", "degraded", "disconnected"}[c]
}

// Health is what the status line says about the source.
type Health struct {
	State Connection
	Err   string    // the last error, when Degraded or Disconnected
	Since time.Time // when State began, from the source's clock
}
