package rollout

import (
	"cmp"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
)

// member is what the planner needs of one node, read once.
type member struct {
	node        *corev1.Node
	name        string
	zone        string
	hasZone     bool
	zoneRank    int   // the zone's place in sorted order; nodes without a zone rank last
	created     int64 // creation time: Unix seconds, then nanoseconds
	createdN    int
	readyErr    error
	chosen      bool  // Plan: the step targets or retries the node
	priority    int   // policy.PriorityKey: higher first
	priorityErr error // the priority does not parse
	held        bool  // policy.HoldKey
	holdErr     error

	// current, desired and state are the node's annotations; Preview advances them
	// as it simulates waves completing.
	current, desired, state string
	reason                  string
	// stageImage and stagedImage are the node's nodeanno.StageImageKey and
	// StagedImageKey: the OS image it was asked to stage, and the one it staged.
	stageImage, stagedImage string
	// stageCapable says the node's agent publishes that it stages
	// (nodeanno.CapabilityStageOSImage); stageProgress that it reports a download of
	// the image it was asked to stage (nodeanno.StageProgressKey), and
	// stageProgressText how far it is, for the pool's OSImageStaging message.
	stageCapable, stageProgress bool
	stageProgressText           string
}

// readMember reads what the planner needs of n. The zone's rank, and whether the
// plan chooses the node, depend on the other members: snapshotWith sets them on its
// copy.
func readMember(n *corev1.Node) member {
	zone, hasZone := n.Labels[ZoneLabel]
	m := member{
		node:     n,
		name:     n.Name,
		zone:     zone,
		hasZone:  hasZone,
		created:  n.CreationTimestamp.Unix(),
		createdN: n.CreationTimestamp.Nanosecond(),
		readyErr: CheckReady(n),
		current:  nodeanno.Current(n),
		desired:  nodeanno.Desired(n),
		state:    nodeanno.State(n),
		reason:   nodeanno.Reason(n),

		stageImage:  nodeanno.StageImage(n),
		stagedImage: nodeanno.StagedImage(n),

		stageCapable: nodeanno.HasCapability(n, nodeanno.CapabilityStageOSImage),
	}
	if p, ok := nodeanno.Progress(n); ok {
		m.stageProgress, m.stageProgressText = true, p.String()
	}
	m.priority, m.priorityErr = policy.Priority(n)
	m.held, m.holdErr = policy.Held(n)
	return m
}

// snapshot reads nodes (nil entries are dropped) and returns them in rollout order.
func snapshot(nodes []*corev1.Node) []*member {
	ms, _, _ := snapshotWith(nil, nodes, policy.OrderDefault)
	return ms
}

// snapshotWith is snapshot under a pool's update order, with the nodes' priorities and
// holds read, through c (nil: read afresh). A priority that does not parse is an error
// naming the node; a hold that does not parse holds the node (holdErr says why).
// Once the members are no longer used, release hands their memory back to c for the
// next plan (a copy of each member, a megabyte per plan of 5,000 nodes).
func snapshotWith(c *Memo, nodes []*corev1.Node, order policy.Order) (ms []*member, release func(), err error) {
	var errs []error
	c.lock()
	backing := c.takeMembers(len(nodes))
	for _, n := range nodes {
		if n == nil {
			continue
		}
		// A copy: Plan marks the chosen and Preview advances the configs on it.
		backing = append(backing, c.entry(n).m)
		if err := backing[len(backing)-1].priorityErr; err != nil {
			errs = append(errs, err)
		}
	}
	prev := c.lastOrder(order)
	c.unlock()
	rankZones(backing)
	ms = make([]*member, len(backing))
	for i := range backing {
		ms[i] = &backing[i]
	}
	ms, same := arrange(ms, memberName, prev)
	byOrder := func(a, b *member) int { return compareOrder(a, b, order) }
	sorted := slices.IsSortedFunc(ms, byOrder)
	if !sorted {
		slices.SortFunc(ms, byOrder)
	}
	if c != nil && (!same || !sorted) {
		c.rememberOrder(ms, order)
	}
	return ms, func() { c.giveMembers(backing) }, errors.Join(errs...)
}

// rankZones numbers the zones in sorted order, so that sorting compares integers. A
// pool spans a handful of zones.
func rankZones(ms []member) {
	seen := map[string]bool{}
	var zones []string
	for i := range ms {
		if ms[i].hasZone && !seen[ms[i].zone] {
			seen[ms[i].zone] = true
			zones = append(zones, ms[i].zone)
		}
	}
	slices.Sort(zones)
	for i := range ms {
		if ms[i].hasZone {
			ms[i].zoneRank, _ = slices.BinarySearch(zones, ms[i].zone)
		} else {
			ms[i].zoneRank = len(zones)
		}
	}
}

func memberName(m *member) string { return m.name }

func (m *member) ready() bool       { return m.readyErr == nil }
func (m *member) done() bool        { return done(m.current, m.desired, m.state) }
func (m *member) failing() bool     { return failing(m.current, m.desired, m.state) }
func (m *member) unavailable() bool { return unavailable(m.ready(), m.current, m.desired, m.state) }
func (m *member) degraded() bool    { return IsDegraded(m.desired, m.state) }

// compareOrder orders nodes by priority (higher first; all 0 unless the nodes set
// policy.PriorityKey), then the way MCO's sortNodeList does (by zone label, nodes
// without one last, then oldest first) and then by name, which MCO leaves to chance,
// so that the same nodes always plan the same way. An update order (OldestFirst,
// NewestFirst, as MCO's proposed spec.updateOrder) replaces the zones with age alone.
func compareOrder(a, b *member, order policy.Order) int {
	if c := cmp.Compare(b.priority, a.priority); c != 0 {
		return c
	}
	switch order {
	case policy.OrderOldestFirst, policy.OrderNewestFirst:
		c := cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.createdN, b.createdN))
		if order == policy.OrderNewestFirst {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.name, b.name))
	}
	if c := cmp.Compare(a.zoneRank, b.zoneRank); c != 0 {
		return c
	}
	if c := cmp.Compare(a.created, b.created); c != 0 {
		return c
	}
	if c := cmp.Compare(a.createdN, b.createdN); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// Order returns the nodes in rollout order: by update priority (policy.PriorityKey,
// higher first), then by topology.kubernetes.io/zone (nodes without the label last),
// then by creation time (oldest first), then by name. nodes is not modified; nil
// entries are dropped.
func Order(nodes []*corev1.Node) []*corev1.Node {
	ms := snapshot(nodes)
	out := make([]*corev1.Node, len(ms))
	for i, m := range ms {
		out[i] = m.node
	}
	return out
}
