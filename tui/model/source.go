package model

import configv1 "github.com/openshift/api/config/v1"

// Cluster kinds, as the status line names them.
const (
	ClusterMCO     = "OpenShift (MCO)"
	ClusterManaged = "mcotui-managed"
)

// Info describes where a Source's data comes from, for the status line, and what kind
// of cluster it is, which decides the actions the TUI offers.
type Info struct {
	// Context is the kubeconfig context, or a name such as "demo".
	Context string
	// Cluster is the kind of cluster: ClusterMCO, ClusterManaged, "demo", "fixture".
	Cluster string
	// MCO says the Machine Config Operator runs the cluster: the TUI then offers only
	// what MCO's API lets an administrator do (pause, maxUnavailable, boot image
	// modes); rollouts, rollbacks and retries are MCO's own business there.
	MCO bool
	// Platform is the infrastructure platform (Infrastructure/cluster), which decides
	// the default boot image mode; empty when unknown.
	Platform configv1.PlatformType
	// Unreadable are the resources ("machineosbuilds") the cluster serves but the
	// session's identity may not list and watch, so that the source does not watch them:
	// the views that draw them say so rather than show none.
	Unreadable []string
}

// Source feeds the TUI. A cluster informer source, the demo simulation and test fixtures
// all implement it, so that all of them take the same path through the root model.
//
// Snapshot is the state at the time of the call; Events delivers every change after it
// and is closed when the source stops. An event may repeat what the snapshot already
// holds (an informer cannot tell exactly where a list ends and its watch begins): the
// Store applies events idempotently, so repeats cost nothing but the work.
//
// Events should be buffered: the root drains whatever is pending into a message (a few
// for a large burst), and a buffer is what lets a burst be pending at once.
type Source interface {
	Info() Info
	Snapshot() []Event
	Events() <-chan Event
}

// ChanSource is a Source over a given snapshot and channel: the building block of test
// fixtures and of sources that compute their events elsewhere.
type ChanSource struct {
	info     Info
	snapshot []Event
	events   chan Event
}

// NewChanSource returns a source with the given snapshot whose events channel has room
// for buffer pending events.
func NewChanSource(info Info, snapshot []Event, buffer int) *ChanSource {
	return &ChanSource{info: info, snapshot: snapshot, events: make(chan Event, buffer)}
}

// Info implements Source.
func (s *ChanSource) Info() Info { return s.info }

// Snapshot implements Source.
func (s *ChanSource) Snapshot() []Event { return s.snapshot }

// Events implements Source.
func (s *ChanSource) Events() <-chan Event { return s.events }

// Send delivers events, blocking while the buffer is full.
func (s *ChanSource) Send(events ...Event) {
	for _, e := range events {
		s.events <- e
	}
}

// Close ends the events channel, as a source does when it stops.
func (s *ChanSource) Close() { close(s.events) }
