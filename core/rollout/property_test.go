package rollout_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

// Configs and states are drawn from small sets so that nodes collide on them.
var (
	genConfigs = []string{"", "rendered-a", "rendered-b", "rendered-c"}
	genStates  = []string{"", nodeanno.StateWorking, nodeanno.StateDone, nodeanno.StateDone, nodeanno.StateDegraded, nodeanno.StateUnreconcilable}
)

const noLabel = "<none>"

func genNode() *rapid.Generator[*corev1.Node] {
	return rapid.Custom(func(t *rapid.T) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:              rapid.StringMatching(`n[0-9]{1,2}`).Draw(t, "name"),
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "age")) * time.Minute)),
		}}
		if z := rapid.SampledFrom([]string{noLabel, "", "z1", "z2"}).Draw(t, "zone"); z != noLabel {
			n.Labels[rollout.ZoneLabel] = z
		}
		for key, values := range map[string][]string{
			nodeanno.CurrentConfigKey: genConfigs,
			nodeanno.DesiredConfigKey: genConfigs,
			nodeanno.StateKey:         genStates,
			nodeanno.ReasonKey:        {"", "boom"},
		} {
			if v := rapid.SampledFrom(values).Draw(t, key); v != "" {
				n.Annotations[key] = v
			}
		}
		for _, c := range []struct {
			t      corev1.NodeConditionType
			values []corev1.ConditionStatus
		}{
			{corev1.NodeReady, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown, ""}},
			{corev1.NodeDiskPressure, []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionTrue, ""}},
			{corev1.NodeNetworkUnavailable, []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionTrue, ""}},
		} {
			// "" leaves the condition out.
			if s := rapid.SampledFrom(c.values).Draw(t, string(c.t)); s != "" {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c.t, Status: s})
			}
		}
		n.Spec.Unschedulable = rapid.IntRange(0, 4).Draw(t, "unschedulable") == 0
		if n.Spec.Unschedulable && rapid.Bool().Draw(t, "agent cordon") {
			n.Annotations[nodeanno.CordonedByKey] = nodeanno.CordonedByAgent
		}
		return n
	})
}

type scenario struct {
	pool  *mcfgv1.MachineConfigPool
	nodes []*corev1.Node
	opts  rollout.Options
}

func genScenario(t *rapid.T) scenario {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: rapid.SampledFrom([]string{"worker", "worker", "infra", rollout.ArbiterPool}).Draw(t, "pool")}}
	p.Spec.Configuration.Name = rapid.SampledFrom(genConfigs[1:]).Draw(t, "target")
	p.Spec.Paused = rapid.IntRange(0, 3).Draw(t, "paused") == 0
	switch rapid.IntRange(0, 2).Draw(t, "maxUnavailable kind") {
	case 1:
		v := intstr.FromInt32(int32(rapid.IntRange(0, 6).Draw(t, "maxUnavailable")))
		p.Spec.MaxUnavailable = &v
	case 2:
		v := intstr.FromString(rapid.StringMatching(`(100|[1-9]?[0-9])%`).Draw(t, "maxUnavailable"))
		p.Spec.MaxUnavailable = &v
	}
	ns := rapid.SliceOfNDistinct(genNode(), 0, 14, func(n *corev1.Node) string { return n.Name }).Draw(t, "nodes")
	opts := rollout.Options{Canary: rapid.IntRange(0, 3).Draw(t, "canary")}
	if rapid.IntRange(0, 3).Draw(t, "override") == 0 {
		opts.Target = rapid.SampledFrom(genConfigs[1:]).Draw(t, "override target")
	}
	for _, n := range ns {
		if rapid.IntRange(0, 3).Draw(t, "retry "+n.Name) == 0 {
			opts.Retry = append(opts.Retry, n.Name)
		}
	}
	return scenario{p, ns, opts}
}

func (s scenario) target() string {
	if s.opts.Target != "" {
		return s.opts.Target
	}
	return s.pool.Spec.Configuration.Name
}

// budgetUse counts the nodes that hold a unit of the pool's maxUnavailable: those that
// are unavailable and those failing at the target, which MCO also charges.
func budgetUse(ns []*corev1.Node, target string) int {
	use := 0
	for _, n := range ns {
		if rollout.Unavailable(n) || (nodeanno.Desired(n) == target && rollout.Failing(n)) {
			use++
		}
	}
	return use
}

// apply carries out a step on copies of the nodes: each target gets the new desired
// config and its agent starts working, as does each retried node.
func apply(ns []*corev1.Node, s rollout.Step) []*corev1.Node {
	out := make([]*corev1.Node, len(ns))
	for i, n := range ns {
		c := n.DeepCopy()
		if slices.Contains(s.Targets, n.Name) {
			c.Annotations[nodeanno.DesiredConfigKey] = s.Target
			c.Annotations[nodeanno.StateKey] = nodeanno.StateWorking
		}
		if slices.Contains(s.Retry, n.Name) {
			c.Annotations[nodeanno.StateKey] = nodeanno.StateWorking
		}
		out[i] = c
	}
	return out
}

// TestPlanProperties is the rollout's safety property: for any pool, node states and
// maxUnavailable, one step never leaves more nodes unavailable than allowed, a paused
// pool gets no targets, degraded nodes can be retargeted, targets are candidates that
// do not already target the config, and the result does not depend on the order of
// the nodes.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		target := sc.target()
		step, err := rollout.Plan(sc.pool, sc.nodes, sc.opts)
		if err != nil {
			t.Fatalf("Plan: %v", err)
		}
		budget, err := rollout.MaxUnavailable(sc.pool, len(sc.nodes))
		if err != nil {
			t.Fatal(err)
		}
		if step.MaxUnavailable != budget || budget < 1 {
			t.Fatalf("MaxUnavailable = %d, want %d (at least 1)", step.MaxUnavailable, budget)
		}

		// Never more unavailable than allowed.
		before := budgetUse(sc.nodes, target)
		after := budgetUse(apply(sc.nodes, step), target)
		if after > max(budget, before) {
			t.Fatalf("budget use %d -> %d with maxUnavailable %d", before, after, budget)
		}
		if len(step.Targets) > 0 && after > budget {
			t.Fatalf("targets %v take budget use to %d, above maxUnavailable %d", step.Targets, after, budget)
		}

		// Capacity as MCO computes it.
		unavailable, failing, candidates := 0, 0, map[string]bool{}
		byName := map[string]*corev1.Node{}
		for _, n := range sc.nodes {
			byName[n.Name] = n
			if rollout.Unavailable(n) {
				unavailable++
			}
			if nodeanno.Desired(n) == target {
				if rollout.Failing(n) {
					failing++
				}
			} else if rollout.Ready(n) {
				candidates[n.Name] = true
			}
		}
		if want := max(budget-unavailable-failing, 0); step.Capacity != want {
			t.Fatalf("Capacity = %d, want %d", step.Capacity, want)
		}
		if len(step.Targets) > step.Capacity {
			t.Fatalf("%d targets for capacity %d", len(step.Targets), step.Capacity)
		}

		// Targets are candidates; none already targets the config.
		for _, name := range step.Targets {
			if !candidates[name] {
				t.Fatalf("target %s is not a candidate (desired %q, ready %v)", name, nodeanno.Desired(byName[name]), rollout.CheckReady(byName[name]))
			}
		}
		for _, name := range step.Retry {
			if n := byName[name]; nodeanno.Desired(n) != target || !rollout.Failing(n) || !slices.Contains(sc.opts.Retry, name) {
				t.Fatalf("retry of %s, which is not a requested node failing at %s", name, target)
			}
		}

		// A paused pool gets nothing.
		if sc.pool.Spec.Paused && (len(step.Targets) > 0 || len(step.Retry) > 0) {
			t.Fatalf("paused pool got targets %v and retries %v", step.Targets, step.Retry)
		}

		// Every node is accounted for once.
		seen := map[string]int{}
		for _, name := range step.Targets {
			seen[name]++
		}
		for _, name := range step.Retry {
			seen[name]++
		}
		reasons := map[string]rollout.SkipReason{}
		for _, sk := range step.Skipped {
			seen[sk.Node]++
			reasons[sk.Node] = sk.Reason
			if sk.Message == "" {
				t.Fatalf("skip of %s has no message", sk.Node)
			}
		}
		for _, n := range sc.nodes {
			if seen[n.Name] != 1 {
				t.Fatalf("node %s appears %d times in the step", n.Name, seen[n.Name])
			}
		}

		// Degraded nodes are retargetable: a failing node that is Ready and does not
		// target the config is available, a candidate, and only waits for capacity,
		// the canary or a paused pool.
		for _, n := range sc.nodes {
			if !rollout.Failing(n) || !rollout.Ready(n) || nodeanno.Desired(n) == target {
				continue
			}
			if rollout.Unavailable(n) {
				t.Fatalf("failing node %s counts as unavailable", n.Name)
			}
			if slices.Contains(step.Targets, n.Name) {
				continue
			}
			switch reasons[n.Name] {
			case rollout.SkipNoCapacity, rollout.SkipCanary, rollout.SkipPaused:
			default:
				t.Fatalf("failing node %s left out for %q", n.Name, reasons[n.Name])
			}
			if !sc.pool.Spec.Paused && sc.opts.Canary == 0 && step.Capacity >= len(candidates) {
				t.Fatalf("failing node %s not targeted though capacity %d covers %d candidates", n.Name, step.Capacity, len(candidates))
			}
		}

		// The order of the input does not matter.
		shuffled := rapid.Permutation(sc.nodes).Draw(t, "shuffled")
		again, err := rollout.Plan(sc.pool, shuffled, sc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(step, again) {
			t.Fatalf("Plan depends on node order:\n%+v\n%+v", step, again)
		}
	})
}

// TestPreviewProperties checks the forecast: waves stay within maxUnavailable, no node
// is updated twice, and every node is accounted for.
func TestPreviewProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		target := sc.target()
		f, err := rollout.Preview(sc.pool, sc.nodes, sc.opts, nil)
		if err != nil {
			t.Fatalf("Preview: %v", err)
		}
		if len(f.Waves) > len(sc.nodes)+1 {
			t.Fatalf("%d waves for %d nodes", len(f.Waves), len(sc.nodes))
		}
		where := map[string]string{}
		mark := func(name, place string) {
			if prev, ok := where[name]; ok {
				t.Fatalf("node %s is in %s and in %s", name, prev, place)
			}
			where[name] = place
		}
		for _, name := range f.AtTarget {
			mark(name, "AtTarget")
		}
		for i, w := range f.Waves {
			fresh := 0
			for _, c := range w.Nodes {
				mark(c.Node, "a wave")
				if !c.Retry {
					fresh++
				}
				if c.To != target {
					t.Fatalf("wave %d moves %s to %s, not %s", i, c.Node, c.To, target)
				}
			}
			if fresh > f.MaxUnavailable {
				t.Fatalf("wave %d targets %d nodes, maxUnavailable is %d", i, fresh, f.MaxUnavailable)
			}
			if len(w.Nodes) == 0 {
				t.Fatalf("wave %d is empty", i)
			}
		}
		for _, b := range f.Blocked {
			mark(b.Node, "Blocked")
		}
		// The rest were already updating to the target and finish with or before the
		// first wave: the forecast names them in flight.
		for _, n := range sc.nodes {
			if _, ok := where[n.Name]; ok {
				continue
			}
			if nodeanno.Desired(n) != target || rollout.Done(n) || rollout.Failing(n) {
				t.Fatalf("node %s (desired %q, state %q) is neither updated, blocked nor updating", n.Name, nodeanno.Desired(n), nodeanno.State(n))
			}
			if !slices.Contains(f.InFlight, n.Name) {
				t.Fatalf("node %s is updating to the target but not InFlight %v", n.Name, f.InFlight)
			}
		}
		if len(f.Waves) > 0 && f.Waves[0].AfterInFlight && len(f.InFlight) == 0 {
			t.Fatalf("the first wave waits for updates in flight, but none is: %+v", f)
		}
	})
}

// TestPreviewMatchesNaive checks Preview, which follows the nodes of a settled pool
// wave by wave, against a forecast that decides every wave from scratch.
func TestPreviewMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		f, err := rollout.Preview(sc.pool, sc.nodes, sc.opts, nil)
		if err != nil {
			t.Fatalf("Preview: %v", err)
		}
		waves, blocked, err := rollout.NaiveForecast(sc.pool, sc.nodes, sc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := waveNames(f); !sameWaves(got, waves) {
			t.Fatalf("waves = %v, want %v", got, waves)
		}
		if !slices.Equal(f.Blocked, blocked) {
			t.Fatalf("blocked = %+v\nwant %+v", f.Blocked, blocked)
		}
	})
}
