package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/rollout"
)

// benchNodes is a pool mid-rollout: nodes spread over three zones (every tenth without
// one), ages in a few hundred distinct steps; a third done at the target, a tenth
// updating, a few degraded, cordoned or NotReady, the rest waiting at the old config.
func benchNodes(count int) []*corev1.Node {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	ns := make([]*corev1.Node, count)
	for i := range ns {
		opts := []nodeOpt{age(i % 300)}
		if i%10 != 9 {
			opts = append(opts, zone(zones[i%3]))
		}
		switch {
		case i%3 == 0:
			opts = append(opts, at(newCfg))
		case i%10 == 1:
			opts = append(opts, updating(oldCfg, newCfg))
		case i%97 == 2:
			opts = append(opts, degraded(oldCfg, "rendered-worker-bad", "boom"))
		case i%89 == 5:
			opts = append(opts, at(oldCfg), cordoned())
		case i%83 == 7:
			opts = append(opts, at(oldCfg), notReady())
		default:
			opts = append(opts, at(oldCfg))
		}
		ns[i] = node(fmt.Sprintf("worker-%05d", i), opts...)
	}
	return ns
}

// BenchmarkPlan plans one step of a pool of 1,000 and of 10,000 nodes with
// maxUnavailable 20%: reading every node, the sort into rollout order, and the
// explanation of every node left out.
func BenchmarkPlan(b *testing.B) {
	for _, count := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", count), func(b *testing.B) {
			p := pool(maxUnavailable(intstr.FromString("20%")))
			ns := benchNodes(count)
			b.ReportAllocs()
			for b.Loop() {
				s, err := rollout.Plan(p, ns, rollout.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Targets) == 0 {
					b.Fatal("no targets")
				}
			}
		})
	}
}

// BenchmarkPreview forecasts the whole rollout of a pool whose nodes all wait at the
// old config, with maxUnavailable 1 (the worst case: one wave per node) and with 10%.
func BenchmarkPreview(b *testing.B) {
	for _, tc := range []struct {
		count          int
		maxUnavailable intstr.IntOrString
	}{
		{1000, intstr.FromInt32(1)},
		{1000, intstr.FromString("10%")},
		{10000, intstr.FromInt32(1)},
		{10000, intstr.FromString("10%")},
	} {
		b.Run(fmt.Sprintf("nodes=%d/maxUnavailable=%s", tc.count, tc.maxUnavailable.String()), func(b *testing.B) {
			p := pool(maxUnavailable(tc.maxUnavailable))
			ns := make([]*corev1.Node, tc.count)
			for i := range ns {
				ns[i] = node(fmt.Sprintf("worker-%05d", i), at(oldCfg), zone(fmt.Sprintf("zone-%d", i%3)), age(i%300))
			}
			b.ReportAllocs()
			for b.Loop() {
				f, err := rollout.Preview(p, ns, rollout.Options{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(f.Blocked) != 0 {
					b.Fatalf("%d nodes blocked", len(f.Blocked))
				}
			}
		})
	}
}

// BenchmarkMembers sorts 5,000 nodes into their pools, as every rollout sync does: the
// pool's own, a worker pool that selects them too, and a master pool.
func BenchmarkMembers(b *testing.B) {
	p := pool()
	pools := benchPools(p)
	ns := benchNodes(5000)
	for _, n := range ns {
		n.Labels = map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/" + p.Name: ""}
	}
	b.ReportAllocs()
	for b.Loop() {
		members, problems := rollout.Members(p, pools, ns)
		if len(members) != len(ns) || len(problems) > 0 {
			b.Fatalf("%d members, problems %v", len(members), problems)
		}
	}
}

// BenchmarkSyncReads is what a rollout sync reads of a pool of 5,000 nodes, mid-rollout,
// after 50 of its nodes changed (new objects, as an informer delivers them), listed in
// a new order each time (as a lister's, its map's): its
// members among three pools, the planning view, a plan, the pool's status and each
// node's taints; without a Memo, and with one that has seen the pool's sync before.
func BenchmarkSyncReads(b *testing.B) {
	for _, memo := range []bool{false, true} {
		b.Run(fmt.Sprintf("memo=%v", memo), func(b *testing.B) {
			p := pool(maxUnavailable(intstr.FromInt32(50)))
			p.Spec.Configuration.Name = newCfg
			pools := benchPools(p)
			ns := benchNodes(5000)
			for _, n := range ns {
				n.Labels["node-role.kubernetes.io/worker"], n.Labels["node-role.kubernetes.io/"+p.Name] = "", ""
			}
			var c *rollout.Memo
			if memo {
				c = rollout.NewMemo()
			}
			now := metav1.Now()
			round := 0
			shuffle := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				for i := range 50 {
					j := (round*50 + i) % len(ns)
					ns[j] = ns[j].DeepCopy()
				}
				round++
				c.Round()
				// In the order of a lister: its map's, a new one each time.
				listed := slices.Clone(ns)
				shuffle.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
				members, problems := c.Members(p, pools, listed)
				if len(members) != len(ns) || len(problems) > 0 {
					b.Fatalf("%d members, problems %v", len(members), problems)
				}
				view := c.PlanningView(members)
				s, err := c.Plan(p, view, rollout.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Targets) == 0 && s.Wait == "" {
					b.Fatal("no targets and no wait")
				}
				if st := c.Status(p, view, now); st.MachineCount != int32(len(ns)) {
					b.Fatalf("status counts %d machines", st.MachineCount)
				}
				for _, n := range members {
					c.UpdateTaints(p, n)
				}
			}
		})
	}
}

// benchPools makes p the custom pool infra and returns it with a worker pool that
// selects its nodes too and a master pool.
func benchPools(p *mcfgv1.MachineConfigPool) []*mcfgv1.MachineConfigPool {
	p.Name = "infra"
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}}
	worker := pool()
	worker.Name = rollout.WorkerPool
	worker.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}
	master := pool()
	master.Name = rollout.MasterPool
	master.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}}
	return []*mcfgv1.MachineConfigPool{p, worker, master}
}
