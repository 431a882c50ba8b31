package model_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	// Registers -update, so that `go test ./tui/... -update` runs in every package.
	_ "github.com/charmbracelet/x/exp/golden"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

func small(t testing.TB) *model.Store {
	t.Helper()
	s, _ := smallWith(t)
	return s
}

func smallWith(t testing.TB) (*model.Store, []model.Event) {
	t.Helper()
	s := model.NewStore()
	ev := fixture.Small()
	s.Apply(ev)
	return s, ev
}

func TestNodeDerivation(t *testing.T) {
	s := small(t)
	tests := []struct {
		name     string
		phase    string
		degraded bool
		updating bool
		done     bool
		waiting  bool
		behind   bool
		status   string
	}{
		{fixture.BlockedNode, "Drained", true, false, false, false, false, "Ready,SchedulingDisabled"},
		{fixture.DrainingNode, "Drained", false, true, false, false, false, "Ready,SchedulingDisabled"},
		// A drain held by a budget while the agent retries: waiting, not failed.
		{fixture.WaitingNode, "Drained", false, true, false, true, false, "Ready,SchedulingDisabled"},
		{fixture.RebootNode, "RebootedNode", false, true, false, false, false, "NotReady,SchedulingDisabled"},
		{"ci-ln-9xsm9-worker-a-2d8tz", "Updated", false, false, true, false, false, "Ready"},
		// On its own desired config, not the pool's target: behind, not done.
		{fixture.BehindNode, "", false, false, false, false, true, "Ready"},
		{"ci-ln-9xsm9-master-2", "", false, false, false, false, true, "Ready"},
	}
	for _, tt := range tests {
		n := s.Node(tt.name)
		if n == nil {
			t.Fatalf("%s: missing", tt.name)
		}
		if n.PhaseName() != tt.phase || n.Degraded != tt.degraded || n.Updating != tt.updating || n.Done() != tt.done ||
			n.Waiting != tt.waiting || n.Behind != tt.behind || n.Status() != tt.status {
			t.Errorf("%s: phase %q degraded %v updating %v done %v waiting %v behind %v status %q; want %q %v %v %v %v %v %q", tt.name,
				n.PhaseName(), n.Degraded, n.Updating, n.Done(), n.Waiting, n.Behind, n.Status(),
				tt.phase, tt.degraded, tt.updating, tt.done, tt.waiting, tt.behind, tt.status)
		}
	}
	w := s.Node(fixture.WaitingNode)
	if w.Cells[2].State != phase.InProgress || !strings.Contains(w.WaitFor, "shop/cart") {
		t.Errorf("waiting drain: cell %v, waits for %q; want InProgress, the budget", w.Cells[2].State, w.WaitFor)
	}
	if len(w.Blockers) != 1 || w.Blockers[0].Pod != "shop/cart-1" {
		t.Errorf("waiting drain blockers = %v", w.Blockers)
	}
	b := s.Node(fixture.BlockedNode)
	if !slices.EqualFunc(b.Blockers, fixture.Blockers, func(a, b phase.Blocker) bool { return a.String() == b.String() }) {
		t.Errorf("blockers = %v, want %v", b.Blockers, fixture.Blockers)
	}
	if b.Cells[2].State != phase.Failed || b.Cells[9].State != phase.Failed {
		t.Errorf("Drained %v NodeDegraded %v, want Failed both", b.Cells[2].State, b.Cells[9].State)
	}
	if !s.Node(fixture.CordonedNode).AdminCordoned {
		t.Errorf("%s should be admin-cordoned", fixture.CordonedNode)
	}
}

func TestPoolCounts(t *testing.T) {
	s := small(t)
	got := fmt.Sprint(s.Counts("master"), s.Counts("worker"), s.Counts("infra"))
	// {nodes updating degraded done behind waiting}
	want := "{3 0 1 1 1 0} {6 3 0 2 1 1} {2 0 0 0 2 0}"
	if got != want {
		t.Fatalf("counts = %s, want %s", got, want)
	}
	if names := poolNames(s); names != "[infra master worker]" {
		t.Fatalf("pools = %s", names)
	}
	if p := s.Pool("infra"); !p.Paused || p.Updating != "False" || p.MaxUnavailable != "1" {
		t.Fatalf("infra = %+v", p)
	}
}

func poolNames(s *model.Store) string {
	var names []string
	for _, p := range s.Pools() {
		names = append(names, p.Name)
	}
	return fmt.Sprint(names)
}

func TestApplyCoalescesAndIsIdempotent(t *testing.T) {
	s, ev := smallWith(t)
	// The snapshot again, as the first events of an informer repeat its list.
	if ch := s.Apply(ev); len(ch.Nodes) != 0 || ch.Pools {
		t.Fatalf("repeating the snapshot changed %d nodes (pools %v)", len(ch.Nodes), ch.Pools)
	}
	// One node updated three times in a burst is one change.
	burst := fixture.Burst(10, 0)[:1]
	burst = append(burst, fixture.Burst(10, 1)[0], fixture.Burst(10, 2)[0])
	s2 := model.NewStore()
	s2.Apply(fixture.Large(10))
	ch := s2.Apply(burst)
	if len(ch.Nodes) != 1 || ch.Nodes[0].Old == nil || ch.Nodes[0].New == nil {
		t.Fatalf("changes = %+v, want one update", ch.Nodes)
	}
	// Deleting both objects of a node removes it.
	del := []model.Event{
		model.Deleted(model.MCNEvent(&mcfgv1.MachineConfigNode{})),
	}
	del[0].MCN.Name = "master-0"
	n := s2.Node("master-0")
	nodeDel := model.Deleted(model.NodeEvent(n.Obj))
	ch = s2.Apply(append(del, nodeDel))
	if len(ch.Nodes) != 1 || ch.Nodes[0].New != nil || s2.Node("master-0") != nil {
		t.Fatalf("delete: changes %+v", ch.Nodes)
	}
	if c := s2.Counts("master"); c.Nodes != 2 {
		t.Fatalf("master count after delete = %d", c.Nodes)
	}
}

func TestFilter(t *testing.T) {
	s := small(t)
	tests := []struct {
		filter string
		want   int
	}{
		{"", 11},
		{"master", 3},
		{"pool:worker", 6},
		{"phase:drain", 3},
		{"waiting", 1},
		{"behind", 4},
		{"notready", 1},
		{"degraded", 1},
		{"phase:Drained degraded", 1},
		{"!degraded pool:master", 2},
		{"phase:none", 4},
		{"updating", 3},
		{"done", 3},
		{"worker-a", 2},
	}
	for _, tt := range tests {
		f, err := model.ParseFilter(tt.filter)
		if err != nil {
			t.Fatalf("%q: %v", tt.filter, err)
		}
		l := model.NewList(s)
		l.SetQuery(model.Query{Filter: f})
		if l.Len() != tt.want {
			t.Errorf("%q: %d nodes, want %d", tt.filter, l.Len(), tt.want)
		}
	}
	for _, bad := range []string{"phase:bogus", "zone:a", "phase:"} {
		if _, err := model.ParseFilter(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestListSyncMatchesRebuild checks the incremental List against a fresh one after
// random bursts, for every sort order and a filter that nodes move in and out of.
func TestListSyncMatchesRebuild(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const n = 200
		s := model.NewStore()
		s.Apply(fixture.Large(n))
		f, _ := model.ParseFilter(rapid.SampledFrom([]string{"", "updating", "phase:drained", "!degraded"}).Draw(rt, "filter"))
		q := model.Query{
			Filter: f,
			Sort:   model.SortKey(rapid.IntRange(0, model.NumSortKeys-1).Draw(rt, "sort")),
			Desc:   rapid.Bool().Draw(rt, "desc"),
			Pool:   rapid.SampledFrom([]string{"", "worker"}).Draw(rt, "pool"),
		}
		l := model.NewList(s)
		l.SetQuery(q)
		for range rapid.IntRange(1, 5).Draw(rt, "bursts") {
			v := rapid.IntRange(0, 20).Draw(rt, "v")
			all := fixture.Burst(n, v)
			k := rapid.IntRange(0, n).Draw(rt, "k")
			from := rapid.IntRange(0, n-k).Draw(rt, "from")
			l.Sync(s.Apply(all[from : from+k]).Nodes)
		}
		fresh := model.NewList(s)
		fresh.SetQuery(q)
		if got, want := names(l), names(fresh); !slices.Equal(got, want) {
			rt.Fatalf("incremental list differs from a rebuilt one:\n got %v\nwant %v", got, want)
		}
	})
}

func names(l *model.List) []string {
	out := make([]string, l.Len())
	for i := range out {
		out[i] = l.At(i).Name
	}
	return out
}

func TestParseBlockersRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?/[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?`)
		bs := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) phase.Blocker {
			b := phase.Blocker{Pod: name.Draw(rt, "pod")}
			if rapid.Bool().Draw(rt, "budget") {
				b.Budgets = rapid.SliceOfN(name, 1, 3).Draw(rt, "budgets")
			} else {
				b.Reason = rapid.SampledFrom([]string{"Too many requests", "conflict; retry later", "forbidden"}).Draw(rt, "reason")
			}
			return b
		}), 1, 4).Draw(rt, "blockers")
		msg := phase.DrainFailed(phase.DescribeBlockers(bs)).Message
		got := model.ParseBlockers(msg)
		if fmt.Sprint(got) != fmt.Sprint(bs) {
			rt.Fatalf("ParseBlockers(%q)\n = %v\nwant %v", msg, got, bs)
		}
	})
	if got := model.ParseBlockers("Draining node. The drain will not be complete until ..."); got != nil {
		t.Fatalf("in-progress message parsed as %v", got)
	}
}

// TestBehindFollowsTarget: a node is behind only while its pool's target differs from
// its config, so a pool whose target moves re-derives its nodes without any node event.
func TestBehindFollowsTarget(t *testing.T) {
	s := small(t)
	if !s.Node(fixture.BehindNode).Behind {
		t.Fatalf("%s should be behind", fixture.BehindNode)
	}
	p := s.Pool("worker").Obj.DeepCopy()
	p.Spec.Configuration.Name = fixture.WorkerOld
	ch := s.Apply([]model.Event{model.PoolEvent(p)})
	n := s.Node(fixture.BehindNode)
	if n.Behind || n.Target != fixture.WorkerOld {
		t.Fatalf("after the target moved back: behind %v target %q", n.Behind, n.Target)
	}
	found := false
	for _, c := range ch.Nodes {
		found = found || (c.New != nil && c.New.Name == fixture.BehindNode)
	}
	if !found {
		t.Fatalf("the target change reported no change of %s", fixture.BehindNode)
	}
	// The two nodes already on WorkerNew are now off the target (a rollback's view).
	if got := s.Counts("worker").BehindNow; got != 2 {
		t.Fatalf("worker behind = %d, want 2", got)
	}
}

func TestNatural(t *testing.T) {
	in := []string{"worker-10", "worker-2", "worker-1", "master-0", "worker-02", "worker-b", "worker-", "w"}
	slices.SortFunc(in, model.Natural)
	want := []string{"master-0", "w", "worker-", "worker-1", "worker-02", "worker-2", "worker-10", "worker-b"}
	if !slices.Equal(in, want) {
		t.Fatalf("sorted %v, want %v", in, want)
	}
	for _, p := range [][2]string{{"a1", "a01"}, {"x", "x"}, {"a2b", "a10"}} {
		if model.Natural(p[0], p[1]) != -model.Natural(p[1], p[0]) {
			t.Errorf("Natural(%q, %q) is not antisymmetric", p[0], p[1])
		}
	}
}

// TestRetryText: the agent's published retry reads as "retry 3, next in 40s", and as
// due once its time has passed; a node without one says nothing.
func TestRetryText(t *testing.T) {
	s := small(t)
	b := s.Node(fixture.BlockedNode)
	for _, c := range []struct {
		at          time.Duration
		long, short string
	}{
		{0, "retry 3, next in 40s", "r3 in 40s"},
		{35 * time.Second, "retry 3, next in 5s", "r3 in 5s"},
		{40 * time.Second, "retry 3, due now", "r3 due now"},
	} {
		now := fixture.Now.Add(c.at)
		if got, short := b.RetryText(now), b.ShortRetry(now); got != c.long || short != c.short {
			t.Errorf("at +%s: %q, %q; want %q, %q", c.at, got, short, c.long, c.short)
		}
	}
	if w := s.Node(fixture.WaitingNode); w.Retry.Attempt != fixture.WaitRetry.Attempt {
		t.Errorf("waiting drain retry %+v, want %+v", w.Retry, fixture.WaitRetry)
	}
	if d := s.Node(fixture.DrainingNode); d.RetryText(fixture.Now) != "" || d.ShortRetry(fixture.Now) != "" {
		t.Errorf("a node without a retry shows %q", d.RetryText(fixture.Now))
	}
}

// TestTargetedNodeIsNotDrawnUpdated: a node just given the pool's target, whose agent
// has not taken it up yet, still carries the last update's Updated=True. It is updating,
// not done, and its Updated cell is not drawn done.
func TestTargetedNodeIsNotDrawnUpdated(t *testing.T) {
	const name = "ci-ln-9xsm9-worker-a-2d8tz"
	s := small(t)
	before := s.Node(name)
	if !before.Done() || before.Cells[7].State != phase.Done {
		t.Fatalf("%s before it is targeted: done %v, Updated cell %v; the fixture should have it done", name, before.Done(), before.Cells[7].State)
	}
	p := s.Pool("worker").Obj.DeepCopy()
	p.Spec.Configuration.Name = "rendered-worker-next"
	obj := before.Obj.DeepCopy()
	obj.Annotations[nodeanno.DesiredConfigKey] = p.Spec.Configuration.Name
	s.Apply([]model.Event{model.PoolEvent(p), model.NodeEvent(obj)})
	n := s.Node(name)
	if !n.Updating || n.Done() || n.Behind || n.Cells[7].State != phase.NotStarted {
		t.Fatalf("targeted, not started: updating %v done %v behind %v Updated cell %v; want updating, not done, not behind, NotStarted",
			n.Updating, n.Done(), n.Behind, n.Cells[7].State)
	}
}

// TestPoolOfNodeWithoutMCN: a node that has no MachineConfigNode yet is placed as the
// controller places it (rollout.PoolFor): a custom pool over worker, whatever kind of
// selector picks it, and no pool at all for a node two custom pools select, which MCO
// refuses.
func TestPoolOfNodeWithoutMCN(t *testing.T) {
	pool := func(name string, sel *metav1.LabelSelector) *mcfgv1.MachineConfigPool {
		p := &mcfgv1.MachineConfigPool{}
		p.Name = name
		p.Spec.NodeSelector = sel
		return p
	}
	role := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + r: ""}}
	}
	infra := pool("infra", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "node-role.kubernetes.io/infra", Operator: metav1.LabelSelectorOpExists}}})
	node := func(name string, roles ...string) *corev1.Node {
		n := &corev1.Node{}
		n.Name = name
		n.Labels = map[string]string{}
		for _, r := range roles {
			n.Labels["node-role.kubernetes.io/"+r] = ""
		}
		return n
	}
	s := model.NewStore()
	s.Apply([]model.Event{
		model.PoolEvent(pool("worker", role("worker"))), model.PoolEvent(infra), model.PoolEvent(pool("gpu", role("gpu"))),
		model.NodeEvent(node("plain", "worker")), model.NodeEvent(node("infra-1", "worker", "infra")), model.NodeEvent(node("both", "worker", "infra", "gpu")),
	})
	for name, want := range map[string]string{"plain": "worker", "infra-1": "infra", "both": ""} {
		if got := s.Node(name).Pool; got != want {
			t.Errorf("node %s: pool %q, want %q", name, got, want)
		}
	}
}
