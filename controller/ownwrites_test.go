package controller

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

// lagSim is a pure model of a driver planning from a cache that lags: a server that
// keeps nodes with resourceVersions and refuses a write decided on an older one, a
// cache that sees the server's versions only when the test delivers them (in order,
// as a watch does), agents that move a targeted node to Working and then Done, and a
// driver that plans with rollout.Plan (through a rollout.Memo, as Driver.Sync) over the
// cache as its ownWrites record corrects it. Only the planning is the driver's; the API server is a map.
type lagSim struct {
	pool   *mcfgv1.MachineConfigPool
	server map[string]*corev1.Node
	cache  map[string]*corev1.Node
	events []*corev1.Node // versions written, not yet in the cache
	// worst is the most nodes unavailable on the server right after a target the
	// driver wrote: what maxUnavailable bounds.
	worst   int
	rv      int
	own     *ownWrites[*corev1.Node]
	overlay bool // the driver uses own; false shows what planning on the cache alone does
	memo    *rollout.Memo
	names   []string
}

func newLagSim(n, maxU int, overlay bool) *lagSim {
	s := &lagSim{
		pool: &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: "sim"},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MaxUnavailable: ptr.To(intstr.FromInt32(int32(maxU))),
				Configuration:  mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: "rendered-sim-new"}},
			},
		},
		server: map[string]*corev1.Node{}, cache: map[string]*corev1.Node{},
		own:     newOwnWrites[*corev1.Node](clocktesting.NewFakePassiveClock(time.Unix(0, 0))),
		overlay: overlay,
		memo:    rollout.NewMemo(),
	}
	for i := range n {
		name := fmt.Sprintf("n%02d", i)
		s.names = append(s.names, name)
		s.rv++
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(s.rv), Annotations: map[string]string{
				nodeanno.CurrentConfigKey: "rendered-sim-old", nodeanno.DesiredConfigKey: "rendered-sim-old", nodeanno.StateKey: nodeanno.StateDone,
			}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		s.server[name], s.cache[name] = node, node
	}
	return s
}

// write stores next on the server if base is still the server's version (a
// resourceVersion precondition), and returns what the server stored.
func (s *lagSim) write(base *corev1.Node, change func(*corev1.Node)) (*corev1.Node, bool) {
	if s.server[base.Name].ResourceVersion != base.ResourceVersion {
		return nil, false // 409 Conflict
	}
	next := base.DeepCopy()
	change(next)
	s.rv++
	next.ResourceVersion = strconv.Itoa(s.rv)
	s.server[next.Name] = next
	s.events = append(s.events, next)
	return next, true
}

// deliver lets the cache see the k oldest versions it has not seen.
func (s *lagSim) deliver(k int) {
	for ; k > 0 && len(s.events) > 0; k-- {
		e := s.events[0]
		s.events = s.events[1:]
		s.cache[e.Name] = e
	}
}

// agent moves node name on the server one phase on: a node whose desired config is
// new goes Working, a Working one goes Done at it. It writes on the server's version,
// as an agent's patch does.
func (s *lagSim) agent(name string) {
	n := s.server[name]
	switch {
	case nodeanno.Desired(n) != nodeanno.Current(n) && nodeanno.State(n) == nodeanno.StateDone:
		s.write(n, func(n *corev1.Node) { n.Annotations[nodeanno.StateKey] = nodeanno.StateWorking })
	case nodeanno.State(n) == nodeanno.StateWorking:
		s.write(n, func(n *corev1.Node) {
			n.Annotations[nodeanno.CurrentConfigKey] = nodeanno.Desired(n)
			n.Annotations[nodeanno.StateKey] = nodeanno.StateDone
		})
	}
}

// view is what the driver decides on.
func (s *lagSim) view() []*corev1.Node {
	out := make([]*corev1.Node, 0, len(s.names))
	for _, name := range s.names {
		n, ok := s.cache[name]
		if !ok {
			continue // created, and the cache has not seen it yet
		}
		out = append(out, n)
	}
	if s.overlay {
		s.own.latestAll(out)
	}
	return out
}

// ready makes a node Ready on the server, as its kubelet would: a node that was no
// candidate becomes one, and may come before the nodes already targeted.
func (s *lagSim) ready(name string) {
	n := s.server[name]
	if rollout.Ready(n) {
		return
	}
	s.write(n, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue })
}

// join creates node name on the server in zone-a, so that it comes first in rollout
// order (the others have no zone), as a node that joins the pool does.
func (s *lagSim) join(name string) {
	if _, ok := s.server[name]; ok {
		return
	}
	s.rv++
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(s.rv), Labels: map[string]string{rollout.ZoneLabel: "zone-a"}, Annotations: map[string]string{
			nodeanno.CurrentConfigKey: "rendered-sim-old", nodeanno.DesiredConfigKey: "rendered-sim-old", nodeanno.StateKey: nodeanno.StateDone,
		}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	s.server[name] = n
	s.names = append(s.names, name)
	s.events = append(s.events, n)
}

// notReady starts node name NotReady, on the server and in the cache.
func (s *lagSim) notReady(name string) {
	n := s.server[name].DeepCopy()
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	s.server[name], s.cache[name] = n, n
}

// touch is a write of the driver's that changes no availability (as a taint does), so
// that its record chains writes: the target that follows is written over it.
func (s *lagSim) touch(t interface{ Fatal(...any) }, name string) {
	for _, n := range s.view() {
		if n.Name != name {
			continue
		}
		if w, ok := s.write(n, func(n *corev1.Node) { n.Labels = map[string]string{"touched": strconv.Itoa(s.rv)} }); ok {
			s.own.wrote(n.ResourceVersion, w)
		}
	}
}

// step plans on the view and writes each target, as stepOn does.
func (s *lagSim) step(t interface{ Fatal(...any) }) {
	view := s.view()
	// Through a Memo, as Driver.Sync plans: what it remembers of each object must
	// never hide a write.
	s.memo.Round()
	step, err := s.memo.Plan(s.pool, s.memo.PlanningView(view), rollout.Options{Brief: true})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.Node{}
	for _, n := range view {
		byName[n.Name] = n
	}
	for _, name := range step.Targets {
		n := byName[name]
		if w, ok := s.write(n, func(n *corev1.Node) { n.Annotations[nodeanno.DesiredConfigKey] = step.Target }); ok {
			s.own.wrote(n.ResourceVersion, w)
			s.worst = max(s.worst, s.unavailable())
		}
	}
}

// unavailable is how many nodes are unavailable on the server: the truth.
func (s *lagSim) unavailable() int {
	u := 0
	for _, n := range s.server {
		if rollout.Unavailable(n) {
			u++
		}
	}
	return u
}

// TestOwnWritesKeepMaxUnavailableOnALaggingCache: however far the cache lags the
// server (the driver's own targets, its other writes, the agents' reports), a driver
// that plans on the cache as ownWrites corrects it never has more than maxUnavailable
// nodes unavailable on the server, and the rollout still finishes once the cache
// catches up.
func TestOwnWritesKeepMaxUnavailableOnALaggingCache(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "nodes")
		maxU := rapid.IntRange(1, 4).Draw(t, "maxUnavailable")
		s := newLagSim(n, maxU, true)
		for _, name := range s.names {
			if rapid.IntRange(0, 3).Draw(t, "notReady "+name) == 0 {
				s.notReady(name)
			}
		}
		for i := range rapid.IntRange(0, 200).Draw(t, "actions") {
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("action %d", i)) {
			case 4:
				s.ready(rapid.SampledFrom(s.names).Draw(t, "ready"))
			case 5:
				s.join(fmt.Sprintf("j%02d", rapid.IntRange(0, 3).Draw(t, "join")))
			case 0:
				s.step(t)
			case 1:
				s.deliver(rapid.IntRange(0, 3).Draw(t, "deliver"))
			case 2:
				s.agent(rapid.SampledFrom(s.names).Draw(t, "agent"))
			case 3:
				s.touch(t, rapid.SampledFrom(s.names).Draw(t, "touch"))
			}
			if s.worst > maxU {
				t.Fatalf("after action %d: a target left %d nodes unavailable on the server, maxUnavailable %d", i, s.worst, maxU)
			}
		}
		// Catch up: deliver everything, let agents finish, step; the rollout ends.
		for range 4*len(s.names) + 4 {
			for _, name := range s.names {
				s.ready(name)
			}
			s.deliver(len(s.events))
			for _, name := range s.names {
				s.agent(name)
			}
			s.deliver(len(s.events))
			s.step(t)
			if s.worst > maxU {
				t.Fatalf("catching up: a target left %d nodes unavailable, maxUnavailable %d", s.worst, maxU)
			}
		}
		for _, name := range s.names {
			if !rollout.DoneAt(s.server[name], "rendered-sim-new") {
				t.Fatalf("node %s did not finish: %v", name, s.server[name].Annotations)
			}
		}
		if p := s.own.pending(); p != 0 {
			t.Fatalf("%d own writes still recorded once the cache caught up", p)
		}
	})
}

// TestPlanningOnTheLaggingCacheAloneOvershoots is the check that the model can fail.
// The resourceVersion precondition alone stops a stale plan from targeting the same
// nodes twice, but not from targeting others: node j00, first in rollout order, joins
// before the first step, whose targets n00 and n01 the cache has not seen when it
// shows j00; the second step then targets j00 too, three nodes at once with
// maxUnavailable 2, unless the driver's record counts n00 and n01.
func TestPlanningOnTheLaggingCacheAloneOvershoots(t *testing.T) {
	for _, overlay := range []bool{false, true} {
		s := newLagSim(6, 2, overlay)
		s.join("j00") // on the server; the cache has not seen it
		s.step(t)     // targets n00 and n01
		s.deliver(1)  // the cache sees j00, not the targets
		s.step(t)
		want := 2
		if !overlay {
			want = 3
		}
		if s.worst != want {
			t.Errorf("overlay %t: %d nodes unavailable after the second step, want %d", overlay, s.worst, want)
		}
	}
}
