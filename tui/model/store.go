package model

import (
	"cmp"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/rollout"
)

// Change is one node as it was before an Apply (Old, nil when added) and after it (New,
// nil when removed).
type Change struct {
	Old, New *Node
}

// Changes is what one Apply changed: the panes update their views and caches from it
// instead of recomputing everything.
type Changes struct {
	Nodes  []Change // each node at most once, however many events touched it
	Pools  bool     // a pool was added, removed or changed, or its node counts moved
	Health bool
	// Configs: a MachineConfig or MachineConfiguration/cluster changed (the configs
	// pane, the disruption policy of previews).
	Configs bool
	// BootImages: MachineConfiguration/cluster, a MachineSet, a Cluster API object or
	// the target images
	// changed.
	BootImages bool
	// Builds: a MachineOSConfig, a MachineOSBuild or OSImageStream/cluster changed.
	Builds bool
}

// Empty reports whether nothing changed, so that no pane needs to hear of it.
func (c Changes) Empty() bool {
	return len(c.Nodes) == 0 && !c.Pools && !c.Health && !c.Configs && !c.BootImages && !c.Builds
}

// PoolCounts are counts over the nodes the Store knows in one pool.
type PoolCounts struct {
	Nodes       int
	UpdatingNow int
	DegradedNow int
	DoneNow     int
	BehindNow   int // on their own desired config, which is not the pool's target
	WaitingNow  int // updating, with a phase waiting (a drain held by a budget)
}

func (pc *PoolCounts) add(n *Node, sign int) {
	pc.Nodes += sign
	if n.Updating {
		pc.UpdatingNow += sign
	}
	if n.Degraded {
		pc.DegradedNow += sign
	}
	if n.Done() {
		pc.DoneNow += sign
	}
	if n.Behind {
		pc.BehindNow += sign
	}
	if n.Waiting {
		pc.WaitingNow += sign
	}
}

// Store holds the latest Pools and Nodes, keyed by name. Apply folds a batch of events
// into it; everything else reads.
type Store struct {
	objs   map[string]*corev1.Node
	mcns   map[string]*mcfgv1.MachineConfigNode
	nodes  map[string]*Node
	pools  map[string]*Pool
	counts map[string]*PoolCounts
	health Health

	poolList []*Pool // sorted by name; rebuilt when a pool changes
	// members places nodes without a MachineConfigNode among the pools (see poolOf);
	// rebuilt with poolList.
	members *rollout.Membership

	cluster clusterObjects
	images  imageObjects
	diffs   map[diffKey]diffResult // Diff's results, until the configs change

	// touched is Apply's scratch set of node names, kept to spare a map per burst.
	touched map[string]struct{}
	order   []string

	// estimates are Estimate's, per pool, until they age (poolEstimate.ttl).
	estimates map[string]*poolEstimate
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		objs:    map[string]*corev1.Node{},
		mcns:    map[string]*mcfgv1.MachineConfigNode{},
		nodes:   map[string]*Node{},
		pools:   map[string]*Pool{},
		counts:  map[string]*PoolCounts{},
		touched: map[string]struct{}{},
		cluster: newClusterObjects(),
		images:  newImageObjects(),
	}
}

// Apply folds events into the store, in order, and reports what changed. The raw objects
// are replaced event by event, but each touched node is derived once, at the end: a
// burst that updates one node a hundred times costs one Node, one Change and (in the
// panes) one re-render of its row.
func (s *Store) Apply(events []Event) Changes {
	var ch Changes
	poolsChanged := false
	clear(s.touched)
	s.order = s.order[:0]
	touch := func(name string) {
		if _, ok := s.touched[name]; !ok {
			s.touched[name] = struct{}{}
			s.order = append(s.order, name)
		}
	}
	for _, e := range events {
		name := e.Name()
		switch e.Kind {
		case KindHealth:
			s.health = e.Health
			ch.Health = true
		case KindMachineConfig, KindMachineConfiguration, KindMachineSet, KindBootImages, KindKubeletConfig, KindContainerRuntimeConfig, KindCAPI:
			s.applyCluster(e, name, &ch)
		case KindMachineOSConfig, KindMachineOSBuild, KindOSImageStream:
			s.images.apply(e, name, &ch)
		case KindNode:
			if name == "" {
				continue
			}
			if e.Deleted {
				delete(s.objs, name)
			} else {
				s.objs[name] = e.Node
			}
			touch(name)
		case KindMCN:
			if name == "" {
				continue
			}
			if e.Deleted {
				delete(s.mcns, name)
			} else {
				s.mcns[name] = e.MCN
			}
			touch(name)
		case KindPool:
			if name == "" {
				continue
			}
			if old := s.pools[name]; !e.Deleted && old != nil && old.Obj == e.Pool {
				continue // the same object again
			}
			oldTarget := ""
			if old := s.pools[name]; old != nil {
				oldTarget = old.Target
			}
			newTarget := ""
			if e.Deleted {
				delete(s.pools, name)
			} else {
				s.pools[name] = buildPool(e.Pool)
				newTarget = s.pools[name].Target
			}
			if newTarget != oldTarget {
				// The pool's nodes are behind its target or not: derive them again.
				// A target moves once per rollout, so this pass is rare.
				for n, node := range s.nodes {
					if node.Pool == name {
						touch(n)
					}
				}
			}
			ch.Pools, poolsChanged = true, true
			// A node without a MachineConfigNode is placed by the pools' selectors, which
			// may just have changed.
			for n := range s.objs {
				if s.mcns[n] == nil {
					touch(n)
				}
			}
		}
	}
	if poolsChanged {
		s.poolList = s.poolList[:0]
		for _, p := range s.pools {
			s.poolList = append(s.poolList, p)
		}
		slices.SortFunc(s.poolList, func(a, b *Pool) int { return cmp.Compare(a.Name, b.Name) })
		objs := make([]*mcfgv1.MachineConfigPool, len(s.poolList))
		for i, p := range s.poolList {
			objs[i] = p.Obj
		}
		s.members = rollout.NewMembership(objs)
	}
	for _, name := range s.order {
		old := s.nodes[name]
		obj, mcn := s.objs[name], s.mcns[name]
		if old != nil && old.Obj == obj && old.MCN == mcn && !poolsChanged && old.Target == s.targetOf(old.Pool) {
			// The same objects again (an informer resync, or the snapshot repeated by the
			// first events): nothing to derive.
			continue
		}
		var nw *Node
		if obj != nil || mcn != nil {
			nw = build(name, obj, mcn, s.poolOf, s.targetOf)
			s.nodes[name] = nw
		} else {
			delete(s.nodes, name)
		}
		if old != nil {
			s.poolCounts(old.Pool).add(old, -1)
		}
		if nw != nil {
			s.poolCounts(nw.Pool).add(nw, 1)
		}
		if counted(old) != counted(nw) {
			// The pool's counts moved: its estimate's "N left" would disagree with
			// them (and with the grid) until it aged.
			if old != nil {
				s.estimateMoved(old.Pool)
			}
			if nw != nil {
				s.estimateMoved(nw.Pool)
			}
		}
		if old == nil && nw == nil {
			continue
		}
		ch.Nodes = append(ch.Nodes, Change{Old: old, New: nw})
		// Counts moved, so the pools pane redraws; that is a few rows, whatever the burst.
		ch.Pools = true
	}
	return ch
}

func (s *Store) poolCounts(pool string) *PoolCounts {
	pc := s.counts[pool]
	if pc == nil {
		pc = &PoolCounts{}
		s.counts[pool] = pc
	}
	return pc
}

// poolOf places a node that has no MachineConfigNode by the pools' node selectors, as
// MCO and the controller do (rollout.PoolFor): master over a custom pool, a custom pool
// over worker, and no pool for a node two custom pools select.
func (s *Store) poolOf(n *corev1.Node) string {
	if s.members == nil {
		return ""
	}
	p, err := s.members.PoolFor(n)
	if err != nil || p == nil {
		return ""
	}
	return p.Name
}

// targetOf is the target config of the pool named pool, or "".
func (s *Store) targetOf(pool string) string {
	if p := s.pools[pool]; p != nil {
		return p.Target
	}
	return ""
}

// Node returns the node named name, or nil.
func (s *Store) Node(name string) *Node { return s.nodes[name] }

// Len is the number of nodes.
func (s *Store) Len() int { return len(s.nodes) }

// Each calls f for every node, in no particular order.
func (s *Store) Each(f func(*Node)) {
	for _, n := range s.nodes {
		f(n)
	}
}

// Pools returns the pools sorted by name, as `oc get mcp` lists them. The slice is the
// store's own: read it, don't keep it across an Apply.
func (s *Store) Pools() []*Pool { return s.poolList }

// Pool returns the pool named name, or nil.
func (s *Store) Pool(name string) *Pool { return s.pools[name] }

// Counts returns the node counts of a pool.
func (s *Store) Counts(pool string) PoolCounts {
	if pc := s.counts[pool]; pc != nil {
		return *pc
	}
	return PoolCounts{}
}

// Health is the source's last reported health.
func (s *Store) Health() Health { return s.health }
