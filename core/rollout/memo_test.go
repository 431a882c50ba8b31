package rollout_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// TestMemoMatchesFunctions: over rounds of a pool's syncs in which nodes change (new
// objects, as an informer delivers them: some replaced by other random nodes, some
// moved on by a step, some left as they are), a Memo's planning view, plan, status and
// taints are the package functions' every round, however long it has remembered the
// nodes that did not change. A brief plan (Options.Brief) is the plan without Skipped.
func TestMemoMatchesFunctions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genScenario(t)
		memo := rollout.NewMemo()
		now := metav1.NewTime(epoch)
		ns := s.nodes
		for round := range rapid.IntRange(1, 6).Draw(t, "rounds") {
			memo.Round()
			view := rollout.PlanningView(ns)
			mview := memo.PlanningView(ns)
			for i := range view {
				if !reflect.DeepEqual(view[i], mview[i]) {
					t.Fatalf("round %d: planning view of %s: memo %v, want %v", round, ns[i].Name, mview[i].Annotations, view[i].Annotations)
				}
			}
			want, wantErr := rollout.Plan(s.pool, view, s.opts)
			got, gotErr := memo.Plan(s.pool, mview, s.opts)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("round %d: memo plan\n%+v (%v)\nwant\n%+v (%v)", round, got, gotErr, want, wantErr)
			}
			brief := s.opts
			brief.Brief = true
			wantBrief := want
			wantBrief.Skipped = nil
			if got, err := memo.Plan(s.pool, mview, brief); !reflect.DeepEqual(got, wantBrief) || !reflect.DeepEqual(err, wantErr) {
				t.Fatalf("round %d: brief plan\n%+v (%v)\nwant the plan without Skipped\n%+v (%v)", round, got, err, wantBrief, wantErr)
			}
			if got, want := memo.Status(s.pool, mview, now), rollout.Status(s.pool, view, now); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: memo status\n%+v\nwant\n%+v", round, got, want)
			}
			for _, n := range ns {
				gotT, gotC := memo.UpdateTaints(s.pool, n)
				wantT, wantC := rollout.UpdateTaints(s.pool, n)
				if !reflect.DeepEqual(gotT, wantT) || gotC != wantC {
					t.Fatalf("round %d: memo taints of %s: %v %v, want %v %v", round, n.Name, gotT, gotC, wantT, wantC)
				}
			}
			// The next round's nodes: the step's targets and a random few change.
			next := make([]*corev1.Node, len(ns))
			copy(next, ns)
			if wantErr == nil {
				next = apply(ns, want)
				for i := range next {
					if reflect.DeepEqual(next[i], ns[i]) {
						next[i] = ns[i] // unchanged: the same object, as in a cache
					}
				}
			}
			for i := range next {
				switch rapid.IntRange(0, 5).Draw(t, "change") {
				case 0:
					n := genNode().Draw(t, "replacement")
					n.Name = ns[i].Name
					next[i] = n
				case 1:
					n := next[i].DeepCopy()
					if n.Annotations == nil {
						n.Annotations = map[string]string{}
					}
					n.Annotations[nodeanno.StateKey] = rapid.SampledFrom(genStates).Draw(t, "state")
					n.Annotations[nodeanno.CurrentConfigKey] = n.Annotations[nodeanno.DesiredConfigKey]
					next[i] = n
				}
			}
			// Nodes join and leave the pool, and its update order changes: the order
			// the Memo remembers from the last plan must not outlive either.
			switch rapid.IntRange(0, 3).Draw(t, "membership") {
			case 0:
				if len(next) > 1 {
					k := rapid.IntRange(0, len(next)-1).Draw(t, "leaves")
					next = append(next[:k:k], next[k+1:]...)
				}
			case 1:
				n := genNode().Draw(t, "joins")
				n.Name = fmt.Sprintf("joined-%d", round)
				next = append(next, n)
			}
			if rapid.IntRange(0, 3).Draw(t, "reorder") == 0 {
				s.opts.Policy.Order = rapid.SampledFrom([]policy.Order{policy.OrderDefault, policy.OrderOldestFirst, policy.OrderNewestFirst}).Draw(t, "order")
			}
			ns = next
		}
	})
}

// TestMemoForgets: a node object not read for a whole round is forgotten, so a Memo
// holds the cache's present objects rather than every version it saw; and the facts
// it keeps are those of the object it was given, not of a later version.
func TestMemoForgets(t *testing.T) {
	p := pool()
	p.Spec.Configuration.Name = newCfg
	a, b := node("a", at(oldCfg)), node("b", at(newCfg))
	memo := rollout.NewMemo()
	memo.Round()
	if st := memo.Status(p, nodes(a, b), metav1.Now()); st.UpdatedMachineCount != 1 {
		t.Fatalf("updated %d, want 1 (b)", st.UpdatedMachineCount)
	}
	a2 := node("a", at(newCfg))
	memo.Round()
	if st := memo.Status(p, nodes(a2, b), metav1.Now()); st.UpdatedMachineCount != 2 {
		t.Fatalf("after a moved on: updated %d, want 2", st.UpdatedMachineCount)
	}
	if got := rollout.MemoSize(memo); got != 3 {
		t.Fatalf("memo holds %d objects after two rounds, want 3 (a, a2, b)", got)
	}
	memo.Round()
	memo.Status(p, nodes(a2, b), metav1.Now())
	if got := rollout.MemoSize(memo); got != 2 {
		t.Fatalf("memo holds %d objects, want 2: a's old object was not read for a round", got)
	}
}

// TestMemoMembers: a Memo's Members are the package's over rounds in which nodes get
// new labels (new objects) and pools change their nodeSelectors, custom pools that
// overlap included.
func TestMemoMembers(t *testing.T) {
	roles := []string{rollout.MasterPool, rollout.WorkerPool, "infra", "gpu"}
	genLabels := func(t *rapid.T) map[string]string {
		ls := map[string]string{}
		for _, r := range roles {
			if rapid.IntRange(0, 2).Draw(t, "has "+r) == 0 {
				ls["node-role.kubernetes.io/"+r] = ""
			}
		}
		return ls
	}
	genPool := func(t *rapid.T, name string) *mcfgv1.MachineConfigPool {
		p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		switch rapid.IntRange(0, 4).Draw(t, "selector of "+name) {
		case 0: // none: selects no node
		case 1:
			p.Spec.NodeSelector = &metav1.LabelSelector{}
		default:
			role := rapid.SampledFrom(roles).Draw(t, "role of "+name)
			p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + role: ""}}
		}
		return p
	}
	rapid.Check(t, func(t *rapid.T) {
		pools := make([]*mcfgv1.MachineConfigPool, len(roles))
		for i, r := range roles {
			pools[i] = genPool(t, r)
		}
		ns := make([]*corev1.Node, rapid.IntRange(0, 12).Draw(t, "nodes"))
		for i := range ns {
			ns[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%02d", i), Labels: genLabels(t)}}
		}
		memos := map[string]*rollout.Memo{}
		for _, r := range roles {
			memos[r] = rollout.NewMemo()
		}
		for round := range rapid.IntRange(1, 6).Draw(t, "rounds") {
			for _, p := range pools {
				memos[p.Name].Round()
				got, gotErrs := memos[p.Name].Members(p, pools, ns)
				want, wantErrs := rollout.Members(p, pools, ns)
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErrs, wantErrs) {
					t.Fatalf("round %d, pool %s: memo members %v (%v), want %v (%v)", round, p.Name, nodeNames(got), gotErrs, nodeNames(want), wantErrs)
				}
			}
			for i := range ns {
				if rapid.IntRange(0, 3).Draw(t, "relabel") == 0 {
					n := ns[i].DeepCopy()
					n.Labels = genLabels(t)
					ns[i] = n
				}
			}
			if rapid.IntRange(0, 3).Draw(t, "change a pool") == 0 {
				i := rapid.IntRange(0, len(pools)-1).Draw(t, "pool")
				pools[i] = genPool(t, pools[i].Name)
			}
		}
	})
}

func nodeNames(ns []*corev1.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// TestMemoConcurrentPlans: plans made at once through one Memo (it is shared by a
// pool's syncs, and lends each plan the memory of the last) are each the package's
// plan, under -race.
func TestMemoConcurrentPlans(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genScenario(t)
		memo := rollout.NewMemo()
		view := rollout.PlanningView(s.nodes)
		want, wantErr := rollout.Plan(s.pool, view, s.opts)
		var wg sync.WaitGroup
		got := make([]rollout.Step, 4)
		errs := make([]error, 4)
		for i := range got {
			wg.Go(func() {
				for range 3 {
					got[i], errs[i] = memo.Plan(s.pool, view, s.opts)
				}
			})
		}
		wg.Wait()
		for i := range got {
			if !reflect.DeepEqual(got[i], want) || !reflect.DeepEqual(errs[i], wantErr) {
				t.Fatalf("plan %d through the shared memo\n%+v (%v)\nwant\n%+v (%v)", i, got[i], errs[i], want, wantErr)
			}
		}
	})
}
