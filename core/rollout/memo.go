package rollout

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcotui/mcotui/core/policy"
)

// A Memo keeps what planning reads of each node object (its pool membership,
// annotations, readiness, zone, age, priority, hold and taint), so that a pool synced
// again reads only the nodes that changed since. A pool's sync reads every member five
// times (Members, the planning view, Plan, Status, UpdateTaints), and on thousands of
// nodes those reads (selector matches, map lookups of annotation keys that share a long
// prefix, scans of the conditions) were most of a sync's time.
//
// A Memo relies on what an informer's cache promises: its objects are never modified;
// a change arrives as a new object. So a node pointer names one version of a node.
// Give a Memo only such objects, or copies that nobody modifies once given. A nil
// *Memo is valid and remembers nothing: its methods are the package's functions.
//
// A Memo is safe for concurrent use. Facts of nodes not read for a whole round
// (Round) are forgotten.
type Memo struct {
	mu    sync.Mutex
	round uint64
	by    map[*corev1.Node]*memoEntry
	// pools is what membership was last decided on (poolsKey), and poolsGen counts
	// its changes: an entry's membership holds while its poolsGen is the Memo's.
	pools    string
	poolsGen uint64
	// order is the rollout order of the last plan made through the Memo, a name to
	// its place, under the update order orderFor. The next plan lays its members out
	// so before it sorts them: members already in order cost one pass, where sorting
	// 5,000 of them afresh was a quarter of a sync's reads. Their order moves only
	// when a node's priority or zone, the pool's members or its update order do. A
	// map that is replaced, never modified, so a plan may read it unlocked.
	order    map[string]int
	orderFor policy.Order
	// names are the places of the last Members' nodes, by name (see arrange).
	names map[string]int
	// spare is the members' memory of the last plan, handed back once it was made;
	// nil while a plan uses it.
	spare []member
}

type memoEntry struct {
	used uint64 // the last round that read it

	read  bool   // m and taint are set
	m     member // as snapshotWith reads it; never modified once stored
	taint bool   // HasUpdateInProgressTaint
	// view is the node as PlanningView shows it, when that is a copy (an unenrolled
	// node): the same copy every round, so that its own facts are remembered too.
	view *corev1.Node

	poolsGen uint64 // member and problem hold while it is the Memo's (Members)
	member   bool
	problem  error
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{by: map[*corev1.Node]*memoEntry{}} }

// Round begins a new round of reads (a pool's sync): the facts of nodes read in
// neither this round nor the one before are dropped, so that the Memo holds the
// cache's present objects and not every version it ever had.
func (c *Memo) Round() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round++
	for n, e := range c.by {
		if e.used+1 < c.round {
			delete(c.by, n)
		}
	}
}

// entry is n's facts, read now when the Memo has none. c.mu is held; a nil c reads
// afresh each time.
func (c *Memo) entry(n *corev1.Node) *memoEntry {
	var e *memoEntry
	if c != nil {
		e = c.lookup(n)
	} else {
		e = &memoEntry{}
	}
	if !e.read {
		e.read, e.m, e.taint = true, readMember(n), HasUpdateInProgressTaint(n)
	}
	return e
}

// lookup is n's entry, an empty one when the Memo has none, marked as read this
// round. c.mu is held.
func (c *Memo) lookup(n *corev1.Node) *memoEntry {
	e, ok := c.by[n]
	if !ok {
		e = &memoEntry{}
		c.by[n] = e
	}
	e.used = c.round
	return e
}

func (c *Memo) lock() {
	if c != nil {
		c.mu.Lock()
	}
}

func (c *Memo) unlock() {
	if c != nil {
		c.mu.Unlock()
	}
}

// lastOrder is the order the last plan under the update order order left, nil when
// there is none (or c is nil). c.mu is held.
func (c *Memo) lastOrder(order policy.Order) map[string]int {
	if c == nil || c.orderFor != order {
		return nil
	}
	return c.order
}

// takeMembers is room for n members: the spare of the last plan when it is free
// and large enough. c.mu is held; a nil c allocates.
func (c *Memo) takeMembers(n int) []member {
	if c == nil || cap(c.spare) < n {
		return make([]member, 0, n)
	}
	ms := c.spare[:0]
	c.spare = nil
	return ms
}

// giveMembers hands a plan's members back once it no longer uses them. What they
// point at (node objects, strings) stays reachable until the next plan overwrites
// them, as the Memo's entries keep it anyway.
func (c *Memo) giveMembers(ms []member) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cap(ms) > cap(c.spare) {
		c.spare = ms
	}
}

// rememberOrder keeps ms's order, under the update order order, for the next plan.
func (c *Memo) rememberOrder(ms []*member, order policy.Order) {
	places := placesOf(ms, memberName)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order, c.orderFor = places, order
}

// arrange lays items out in the order places gives their names (a name to its
// place), followed by those places does not name, in their order, and reports whether
// places named them all and nothing else. Sorting items laid out in the order they
// were sorted in last time is then a check of one pass. A nil places leaves items as
// they are.
func arrange[T any](items []T, name func(T) string, places map[string]int) ([]T, bool) {
	if places == nil {
		return items, false
	}
	if len(items) == 0 {
		return items, len(places) == 0
	}
	slots := make([]T, len(places))
	filled := make([]bool, len(places))
	var rest []T
	for _, it := range items {
		if j, ok := places[name(it)]; ok && !filled[j] {
			slots[j], filled[j] = it, true
		} else {
			rest = append(rest, it)
		}
	}
	out := make([]T, 0, len(items))
	for j, ok := range filled {
		if ok {
			out = append(out, slots[j])
		}
	}
	return append(out, rest...), len(rest) == 0 && len(out) == len(places)
}

// placesOf maps each item's name to its place in items.
func placesOf[T any](items []T, name func(T) string) map[string]int {
	places := make(map[string]int, len(items))
	for i, it := range items {
		places[name(it)] = i
	}
	return places
}

func nodeName(n *corev1.Node) string { return n.Name }

// PlanningView is the package's PlanningView, with each unenrolled node's copy kept
// for as long as the node object is: planning it again reads the same copy.
func (c *Memo) PlanningView(nodes []*corev1.Node) []*corev1.Node {
	if c == nil {
		return PlanningView(nodes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		if n == nil {
			continue
		}
		e := c.entry(n)
		switch {
		case e.m.current != "" || e.m.desired != "" || e.m.state != "":
			out[i] = n // enrolled: as it is
		case e.view != nil:
			out[i] = e.view
		default:
			e.view = PlanningView([]*corev1.Node{n})[0]
			out[i] = e.view
		}
	}
	return out
}

// Plan is the package's Plan, reading nodes through the Memo.
func (c *Memo) Plan(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, opts Options) (Step, error) {
	return plan(c, pool, nodes, opts)
}

// Status is the package's Status, reading nodes through the Memo.
func (c *Memo) Status(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, now metav1.Time) mcfgv1.MachineConfigPoolStatus {
	return status(c, pool, nodes, now)
}

// UpdateTaints is the package's UpdateTaints, reading n through the Memo: a node
// whose taints are right costs a lookup.
func (c *Memo) UpdateTaints(pool *mcfgv1.MachineConfigPool, n *corev1.Node) ([]corev1.Taint, bool) {
	target := pool.Spec.Configuration.Name
	if pool.Spec.Paused || target == "" {
		return n.Spec.Taints, false
	}
	c.lock()
	e := c.entry(n)
	want, has := e.m.desired != target, e.taint
	c.unlock()
	return updateTaints(n, want, has)
}

// Members is the package's Members, with each node's membership remembered for as
// long as the node object and the pools' names and nodeSelectors are the same: a node
// whose labels changed is a new object.
func (c *Memo) Members(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool, nodes []*corev1.Node) ([]*corev1.Node, []error) {
	if c == nil {
		return Members(pool, pools, nodes)
	}
	key := poolsKey(pool, pools)
	c.mu.Lock()
	defer c.mu.Unlock()
	if key != c.pools {
		c.pools = key
		c.poolsGen++
	}
	var sels map[*mcfgv1.MachineConfigPool]labels.Selector // parsed at the first node not remembered
	var out []*corev1.Node
	var problems []error
	for _, n := range nodes {
		if n == nil {
			continue
		}
		e := c.lookup(n)
		if e.poolsGen != c.poolsGen {
			if sels == nil {
				sels = selectors(pool, pools)
			}
			e.poolsGen = c.poolsGen
			e.member, e.problem = memberOf(pool, pools, sels, n)
		}
		switch {
		case e.problem != nil:
			problems = append(problems, e.problem)
		case e.member:
			out = append(out, n)
		}
	}
	// In name order: the lister's is its map's, a new one each time. Laid out as the
	// last sync's members were, they are mostly in order already (see arrange).
	out, same := arrange(out, nodeName, c.names)
	byName := func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(out, byName) {
		slices.SortFunc(out, byName)
		same = false
	}
	if !same {
		c.names = placesOf(out, nodeName)
	}
	return out, problems
}

// poolsKey is what Members decides membership on: the pool's name, and every pool's
// name and nodeSelector, in name order (the lister's order is the map's).
func poolsKey(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool) string {
	parts := make([]string, 0, len(pools))
	for _, p := range pools {
		sel := "<none>"
		if s := selectorOf(p); s != nil {
			sel = s.String()
		}
		parts = append(parts, p.Name+"\x00"+sel)
	}
	slices.Sort(parts)
	own := "<none>"
	if s := selectorOf(pool); s != nil {
		own = s.String()
	}
	return pool.Name + "\x00" + own + "\x01" + strings.Join(parts, "\x01")
}
