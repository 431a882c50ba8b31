package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
)

// history records every change to the Nodes, the MachineConfigNodes, the
// MachineConfigPools and the controllers' Lease, each from one watch that resumes where it stopped (so no change is missed), and
// checks the rollout rules as the changes arrive.
//
// Order: kube-apiserver's resourceVersions are etcd's revisions, one counter for every
// object, so a write's resourceVersion places it among the Lease's versions whatever
// order the three watches deliver them in.
type history struct {
	mu    sync.Mutex
	pools map[string]*mcfgv1.MachineConfigPool // their maxUnavailable
	// poolOf is every node's pool, as the test created it.
	poolOf map[string]string
	nodes  map[string]*corev1.Node
	// armed: the maxUnavailable check runs from then on; before it, nodes are joining
	// (created before kwok marks them Ready), which no rollout decided.
	armed      bool
	changes    int // node and MachineConfigNode changes seen while armed
	peak       map[string]int
	violations []string
	writes     []write
	leases     []leaseVersion
	// paused is each pool's spec.paused as last seen; pauses are its changes, in order.
	paused map[string]bool
	pauses []pauseChange
	// degradedMCN are the nodes whose MachineConfigNode said NodeDegraded=True.
	degradedMCN map[string]bool
	watchErrs   []string
}

// write is a change of a node's desiredConfig annotation.
type write struct {
	node, from, to string
	rv             int64
	// writers are the field managers that own the annotation after the change; a
	// non-apply write takes ownership from every other manager, so there is one.
	writers []string
}

// pauseChange is a write that paused a pool, or resumed it.
type pauseChange struct {
	pool   string
	paused bool
	rv     int64
}

type leaseVersion struct {
	rv     int64
	holder string
}

func newHistory(pools []*mcfgv1.MachineConfigPool, poolOf map[string]string) *history {
	h := &history{pools: map[string]*mcfgv1.MachineConfigPool{}, poolOf: poolOf,
		nodes: map[string]*corev1.Node{}, peak: map[string]int{}, degradedMCN: map[string]bool{}, paused: map[string]bool{}}
	for _, p := range pools {
		h.pools[p.Name] = p
	}
	return h
}

// start begins the four watches; they run until ctx ends and done is closed after.
func (h *history) start(t *testing.T, ctx context.Context, leaseNS, leaseName string) (done <-chan struct{}) {
	t.Helper()
	var wg sync.WaitGroup
	nodes := env.Kube.CoreV1().Nodes()
	list, err := nodes.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		h.node(watch.Added, &list.Items[i])
	}
	h.watch(t, ctx, &wg, "nodes", list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return nodes.Watch(ctx, o)
	}, func(typ watch.EventType, obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			h.node(typ, n)
		}
	})

	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcnList, err := mcns.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.watch(t, ctx, &wg, "machineconfignodes", mcnList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return mcns.Watch(ctx, o)
	}, func(_ watch.EventType, obj any) {
		if m, ok := obj.(*mcfgv1.MachineConfigNode); ok {
			h.mcn(m)
		}
	})

	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	poolList, err := pools.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range poolList.Items {
		h.pool(&poolList.Items[i])
	}
	h.watch(t, ctx, &wg, "machineconfigpools", poolList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return pools.Watch(ctx, o)
	}, func(_ watch.EventType, obj any) {
		if p, ok := obj.(*mcfgv1.MachineConfigPool); ok {
			h.pool(p)
		}
	})

	leases := env.Kube.CoordinationV1().Leases(leaseNS)
	byName := fields.OneTermEqualSelector("metadata.name", leaseName).String()
	leaseList, err := leases.List(ctx, metav1.ListOptions{FieldSelector: byName})
	if err != nil {
		t.Fatal(err)
	}
	for i := range leaseList.Items {
		h.lease(&leaseList.Items[i])
	}
	h.watch(t, ctx, &wg, "lease", leaseList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = byName
		return leases.Watch(ctx, o)
	}, func(_ watch.EventType, obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			h.lease(l)
		}
	})
	out := make(chan struct{})
	go func() { wg.Wait(); close(out) }()
	return out
}

func (h *history) watch(t *testing.T, ctx context.Context, wg *sync.WaitGroup, what, rv string,
	w func(context.Context, metav1.ListOptions) (watch.Interface, error), handle func(watch.EventType, any)) {
	t.Helper()
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w})
	if err != nil {
		t.Fatalf("watch %s: %v", what, err)
	}
	wg.Go(func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						h.watchErr(fmt.Sprintf("the %s watch ended early", what))
					}
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					handle(ev.Type, ev.Object)
				case watch.Error:
					h.watchErr(fmt.Sprintf("the %s watch: %v", what, ev.Object))
				}
			}
		}
	})
}

func (h *history) watchErr(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watchErrs = append(h.watchErrs, msg)
}

func (h *history) node(typ watch.EventType, n *corev1.Node) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.nodes[n.Name]
	if typ == watch.Deleted {
		delete(h.nodes, n.Name)
	} else {
		h.nodes[n.Name] = n
	}
	if to := nodeanno.Desired(n); typ != watch.Deleted && to != "" && (prev == nil || nodeanno.Desired(prev) != to) {
		from := ""
		if prev != nil {
			from = nodeanno.Desired(prev)
		}
		h.writes = append(h.writes, write{node: n.Name, from: from, to: to, rv: parseRV(n.ResourceVersion), writers: desiredOwners(n)})
	}
	h.check(fmt.Sprintf("node %s at resourceVersion %s", n.Name, n.ResourceVersion))
}

func (h *history) mcn(m *mcfgv1.MachineConfigNode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := phase.Find(m.Status.Conditions, phase.NodeDegraded); ok && c.Status == metav1.ConditionTrue {
		h.degradedMCN[m.Name] = true
	}
	h.check(fmt.Sprintf("machineconfignode %s at resourceVersion %s", m.Name, m.ResourceVersion))
}

// pool records a change of the pool's spec.paused; the pool's state when the watch
// begins is where the changes start from.
func (h *history) pool(p *mcfgv1.MachineConfigPool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	was, seen := h.paused[p.Name]
	h.paused[p.Name] = p.Spec.Paused
	if seen && was != p.Spec.Paused {
		h.pauses = append(h.pauses, pauseChange{pool: p.Name, paused: p.Spec.Paused, rv: parseRV(p.ResourceVersion)})
	}
}

func (h *history) lease(l *coordinationv1.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	h.leases = append(h.leases, leaseVersion{rv: parseRV(l.ResourceVersion), holder: holder})
}

// check counts, per pool, the nodes unavailable by core/rollout's rules at this point of
// the history, and records a violation when a pool has more than its maxUnavailable.
func (h *history) check(at string) {
	if !h.armed {
		return
	}
	h.changes++
	members := map[string][]*corev1.Node{}
	for name, n := range h.nodes {
		if pool, ok := h.poolOf[name]; ok {
			members[pool] = append(members[pool], n)
		}
	}
	for name, pool := range h.pools {
		limit, err := rollout.MaxUnavailable(pool, len(members[name]))
		if err != nil {
			h.violations = append(h.violations, err.Error())
			continue
		}
		var unavailable []string
		for _, n := range members[name] {
			if rollout.Unavailable(n) {
				unavailable = append(unavailable, n.Name)
			}
		}
		h.peak[name] = max(h.peak[name], len(unavailable))
		if len(unavailable) > limit {
			slices.Sort(unavailable)
			h.violations = append(h.violations, fmt.Sprintf("after the change of %s, pool %s had %d nodes unavailable, over its maxUnavailable %d: %s",
				at, name, len(unavailable), limit, strings.Join(unavailable, ", ")))
		}
	}
}

// arm starts the maxUnavailable check, and checks the state as it is now.
func (h *history) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = true
	h.check("arming the check")
}

// desiredOwners are the field managers owning the node's desiredConfig annotation.
func desiredOwners(n *corev1.Node) []string {
	key := []byte(`"f:` + nodeanno.DesiredConfigKey + `"`)
	var out []string
	for _, mf := range n.ManagedFields {
		if mf.FieldsV1 != nil && bytes.Contains(mf.FieldsV1.GetRawBytes(), key) {
			out = append(out, mf.Manager)
		}
	}
	return out
}

func parseRV(rv string) int64 {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return -1 // reported by checkDrivers: the order cannot be known
	}
	return v
}

// snapshot copies what the checks at the end read.
func (h *history) snapshot() (writes []write, leases []leaseVersion, violations, watchErrs []string, peak map[string]int, changes int, degraded map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.writes), slices.Clone(h.leases), slices.Clone(h.violations), slices.Clone(h.watchErrs),
		maps.Clone(h.peak), h.changes, maps.Clone(h.degradedMCN)
}

// checked is snapshot, with each watch error and maxUnavailable violation failing t.
func (h *history) checked(t *testing.T) (writes []write, leases []leaseVersion, violations int, peak map[string]int, changes int, degraded map[string]bool) {
	t.Helper()
	writes, leases, vs, watchErrs, peak, changes, degraded := h.snapshot()
	for _, e := range watchErrs {
		t.Errorf("watch: %s", e)
	}
	for _, v := range vs {
		t.Error(v)
	}
	return writes, leases, len(vs), peak, changes, degraded
}

// pauseChanges are the pauses and resumes of pools the watch saw, in order.
func (h *history) pauseChanges() []pauseChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.pauses)
}

// targetedWhilePaused checks that no node of pool got the config target while the pool
// was paused: it finds the write that paused the pool and the one that resumed it, and
// returns the target writes ordered between them by resourceVersion (those ordered
// before the pause are the nodes targeted before it, which may go on), with the two
// resourceVersions. A pool not paused then resumed exactly once is a problem.
func targetedWhilePaused(writes []write, changes []pauseChange, poolOf map[string]string, pool, target string) (during []write, pausedAt, resumedAt int64, problem string) {
	var mine []pauseChange
	for _, c := range changes {
		if c.pool == pool {
			mine = append(mine, c)
		}
	}
	if len(mine) != 2 || !mine[0].paused || mine[1].paused || mine[0].rv < 0 || mine[1].rv <= mine[0].rv {
		return nil, 0, 0, fmt.Sprintf("pool %s: the watch saw the pause changes %+v, want one pause then one resume, at integer resourceVersions", pool, mine)
	}
	pausedAt, resumedAt = mine[0].rv, mine[1].rv
	for _, w := range writes {
		if poolOf[w.node] == pool && w.to == target && (w.rv < 0 || (w.rv > pausedAt && w.rv < resumedAt)) {
			during = append(during, w)
		}
	}
	return during, pausedAt, resumedAt, ""
}

// checkDrivers checks that only the Lease's holder drove: every desiredConfig write to
// one of the configs (the rollout's targets) was made by a controller that held the
// Lease at that point of the history, and each controller's writes form one span that
// no other controller's writes fall into. It returns each controller's writes, by
// identity, in order.
func checkDrivers(writes []write, leases []leaseVersion, controllers map[string]bool, configs map[string]bool) (byWriter map[string][]write, problems []string) {
	sort.Slice(leases, func(i, j int) bool { return leases[i].rv < leases[j].rv })
	for _, l := range leases {
		if l.rv < 0 {
			problems = append(problems, "a Lease resourceVersion is not an integer: the writes cannot be ordered against it")
			return nil, problems
		}
	}
	byWriter = map[string][]write{}
	for _, w := range writes {
		if !configs[w.to] {
			continue
		}
		if w.rv < 0 {
			problems = append(problems, fmt.Sprintf("node %s: resourceVersion of the write to %s is not an integer", w.node, w.to))
			continue
		}
		if len(w.writers) != 1 || !controllers[w.writers[0]] {
			problems = append(problems, fmt.Sprintf("node %s: desiredConfig %s at resourceVersion %d is owned by %v, not by exactly one controller", w.node, w.to, w.rv, w.writers))
			continue
		}
		writer := w.writers[0]
		i := sort.Search(len(leases), func(i int) bool { return leases[i].rv >= w.rv }) - 1
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("node %s: desiredConfig %s written by %s at resourceVersion %d, before anyone held the Lease", w.node, w.to, writer, w.rv))
		case leases[i].holder != writer:
			problems = append(problems, fmt.Sprintf("node %s: desiredConfig %s written by %s at resourceVersion %d while the Lease was held by %q (since resourceVersion %d)",
				w.node, w.to, writer, w.rv, leases[i].holder, leases[i].rv))
		}
		byWriter[writer] = append(byWriter[writer], w)
	}
	type span struct {
		who        string
		first, end int64
	}
	var spans []span
	for who, ws := range byWriter {
		spans = append(spans, span{who, ws[0].rv, ws[len(ws)-1].rv})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	for i := 1; i < len(spans); i++ {
		if spans[i].first <= spans[i-1].end {
			problems = append(problems, fmt.Sprintf("the writes of %s (resourceVersions %d..%d) interleave with those of %s (%d..%d)",
				spans[i-1].who, spans[i-1].first, spans[i-1].end, spans[i].who, spans[i].first, spans[i].end))
		}
	}
	return byWriter, problems
}
