package rollout_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/rollout"
)

func plan(t *testing.T, p *poolT, ns []*nodeT, opts rollout.Options) rollout.Step {
	t.Helper()
	s, err := rollout.Plan(p, ns, opts)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return s
}

func skipOf(s rollout.Step, name string) rollout.Skip {
	for _, sk := range s.Skipped {
		if sk.Node == name {
			return sk
		}
	}
	return rollout.Skip{}
}

func TestPlanRules(t *testing.T) {
	two := maxUnavailable(intstr.FromInt32(2))
	tests := []struct {
		name        string
		pool        *poolT
		nodes       []*nodeT
		opts        rollout.Options
		targets     []string
		retry       []string
		capacity    int
		unavailable []string
		skips       map[string]rollout.SkipReason
		wait        string
	}{
		{
			name:     "capacity is maxUnavailable when every node is available",
			pool:     pool(two),
			nodes:    nodes(node("a", at(oldCfg)), node("b", at(oldCfg)), node("c", at(oldCfg))),
			targets:  []string{"a", "b"},
			capacity: 2,
			skips:    map[string]rollout.SkipReason{"c": rollout.SkipNoCapacity},
			wait:     "waiting for capacity: maxUnavailable is 2 and 0 nodes are unavailable",
		},
		{
			name:        "an updating node uses capacity",
			pool:        pool(two),
			nodes:       nodes(node("a", updating(oldCfg, newCfg)), node("b", at(oldCfg)), node("c", at(oldCfg))),
			targets:     []string{"b"},
			capacity:    1,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "c": rollout.SkipNoCapacity},
			wait:        "waiting for capacity: maxUnavailable is 2 and 1 nodes are unavailable (a)",
		},
		{
			name:        "a node updating to an older config uses capacity and is a candidate",
			pool:        pool(),
			nodes:       nodes(node("a", updating("rendered-worker-older", oldCfg)), node("b", at(oldCfg))),
			capacity:    0,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipNoCapacity, "b": rollout.SkipNoCapacity},
		},
		{
			name:        "a cordoned node uses capacity and is no candidate",
			pool:        pool(two),
			nodes:       nodes(node("a", at(oldCfg), cordoned()), node("b", at(oldCfg)), node("c", at(oldCfg))),
			targets:     []string{"b"},
			capacity:    1,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipNotReady, "c": rollout.SkipNoCapacity},
		},
		{
			name:        "a NotReady node uses capacity and is no candidate",
			pool:        pool(two),
			nodes:       nodes(node("a", at(oldCfg), notReady()), node("b", at(oldCfg))),
			targets:     []string{"b"},
			capacity:    1,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipNotReady},
		},
		{
			name:     "a node failing at the target uses capacity",
			pool:     pool(two),
			nodes:    nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", at(oldCfg)), node("c", at(oldCfg))),
			targets:  []string{"b"},
			capacity: 1,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "c": rollout.SkipNoCapacity},
			wait:     "waiting for capacity: maxUnavailable is 2 and 0 nodes are unavailable, 1 failing at rendered-worker-new (a)",
		},
		{
			name:     "a node failing at another config is available and retargeted",
			pool:     pool(),
			nodes:    nodes(node("a", degraded("rendered-worker-older", oldCfg, "boom"), age(5)), node("b", at(oldCfg), age(1))),
			targets:  []string{"b"},
			capacity: 1,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipNoCapacity},
		},
		{
			name:     "degraded nodes are retargeted when capacity allows",
			pool:     pool(two),
			nodes:    nodes(node("a", degraded(oldCfg, "rendered-worker-bad", "boom")), node("b", annotate(oldCfg, "rendered-worker-bad", "Unreconcilable", "disks"))),
			targets:  []string{"a", "b"},
			capacity: 2,
		},
		{
			name:        "no capacity left",
			pool:        pool(),
			nodes:       nodes(node("a", updating(oldCfg, newCfg)), node("b", at(oldCfg))),
			capacity:    0,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "b": rollout.SkipNoCapacity},
			wait:        "waiting for capacity: maxUnavailable is 1 and 1 nodes are unavailable (a)",
		},
		{
			name:     "nodes already at the target are never targeted",
			pool:     pool(maxUnavailable(intstr.FromString("100%"))),
			nodes:    nodes(node("a", at(newCfg)), node("b", at(oldCfg))),
			targets:  []string{"b"},
			capacity: 2,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget},
		},
		{
			name:  "paused pool gets no targets",
			pool:  pool(two, paused()),
			nodes: nodes(node("a", at(oldCfg)), node("b", at(oldCfg))),
			// Capacity is still reported, for the preview.
			capacity: 2,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipPaused, "b": rollout.SkipPaused},
			wait:     "Pool is paused; will not update to MachineConfig rendered-worker-new",
		},
		{
			name:     "rollback targets the previous rendered config",
			pool:     pool(two),
			nodes:    nodes(node("a", at(newCfg)), node("b", updating(oldCfg, newCfg)), node("c", at(oldCfg))),
			opts:     rollout.Options{Target: oldCfg},
			targets:  []string{"a"},
			capacity: 1,
			// b is updating (to the bad config): it is unavailable and a candidate,
			// but capacity goes in rollout order.
			unavailable: []string{"b"},
			skips:       map[string]rollout.SkipReason{"b": rollout.SkipNoCapacity, "c": rollout.SkipAtTarget},
		},
		{
			name:     "canary: the first step is limited",
			pool:     pool(maxUnavailable(intstr.FromInt32(3))),
			nodes:    nodes(node("a", at(oldCfg)), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			opts:     rollout.Options{Canary: 1},
			targets:  []string{"a"},
			capacity: 3,
			skips:    map[string]rollout.SkipReason{"b": rollout.SkipCanary, "c": rollout.SkipCanary, "d": rollout.SkipCanary},
			wait:     "waiting for the canary: 0 of 1 canary nodes are done at rendered-worker-new",
		},
		{
			name:        "canary: held while the canary updates",
			pool:        pool(maxUnavailable(intstr.FromInt32(3))),
			nodes:       nodes(node("a", updating(oldCfg, newCfg)), node("b", at(oldCfg)), node("c", at(oldCfg))),
			opts:        rollout.Options{Canary: 1},
			capacity:    2,
			unavailable: []string{"a"},
			skips:       map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "b": rollout.SkipCanary, "c": rollout.SkipCanary},
		},
		{
			name:     "canary: held while the canary is failing",
			pool:     pool(maxUnavailable(intstr.FromInt32(3))),
			nodes:    nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", at(oldCfg)), node("c", at(oldCfg))),
			opts:     rollout.Options{Canary: 1},
			capacity: 2,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "b": rollout.SkipCanary, "c": rollout.SkipCanary},
		},
		{
			name:     "canary: done, the rollout continues at maxUnavailable",
			pool:     pool(maxUnavailable(intstr.FromInt32(3))),
			nodes:    nodes(node("a", at(newCfg)), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg)), node("e", at(oldCfg))),
			opts:     rollout.Options{Canary: 1},
			targets:  []string{"b", "c", "d"},
			capacity: 3,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "e": rollout.SkipNoCapacity},
		},
		{
			name:     "canary: capacity still applies within the canary",
			pool:     pool(),
			nodes:    nodes(node("a", at(oldCfg)), node("b", at(oldCfg)), node("c", at(oldCfg))),
			opts:     rollout.Options{Canary: 2},
			targets:  []string{"a"},
			capacity: 1,
			skips:    map[string]rollout.SkipReason{"b": rollout.SkipNoCapacity, "c": rollout.SkipNoCapacity},
		},
		{
			name:     "retry: a failing node is retried without using capacity",
			pool:     pool(),
			nodes:    nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", at(oldCfg))),
			opts:     rollout.Options{Retry: []string{"a"}},
			retry:    []string{"a"},
			capacity: 0,
			skips:    map[string]rollout.SkipReason{"b": rollout.SkipNoCapacity},
		},
		{
			name:     "retry: a node that is not failing is not retried",
			pool:     pool(two),
			nodes:    nodes(node("a", at(newCfg)), node("b", at(oldCfg))),
			opts:     rollout.Options{Retry: []string{"a"}},
			targets:  []string{"b"},
			capacity: 2,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget},
		},
		{
			name:     "retry: not while paused",
			pool:     pool(paused()),
			nodes:    nodes(node("a", degraded(oldCfg, newCfg, "boom"))),
			opts:     rollout.Options{Retry: []string{"a"}},
			capacity: 0,
			skips:    map[string]rollout.SkipReason{"a": rollout.SkipAtTarget},
		},
		{
			name:     "order: zone, then age, then name, nodes without zone last",
			pool:     pool(maxUnavailable(intstr.FromInt32(3))),
			nodes:    nodes(node("x", at(oldCfg), age(0)), node("b2", at(oldCfg), zone("b"), age(1)), node("a-late", at(oldCfg), zone("a"), age(9)), node("b1", at(oldCfg), zone("b"), age(1))),
			targets:  []string{"a-late", "b1", "b2"},
			capacity: 3,
			skips:    map[string]rollout.SkipReason{"x": rollout.SkipNoCapacity},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := plan(t, tt.pool, tt.nodes, tt.opts)
			if !slices.Equal(s.Targets, tt.targets) {
				t.Errorf("Targets = %v, want %v", s.Targets, tt.targets)
			}
			if !slices.Equal(s.Retry, tt.retry) {
				t.Errorf("Retry = %v, want %v", s.Retry, tt.retry)
			}
			if s.Capacity != tt.capacity {
				t.Errorf("Capacity = %d, want %d", s.Capacity, tt.capacity)
			}
			if !slices.Equal(s.Unavailable, tt.unavailable) {
				t.Errorf("Unavailable = %v, want %v", s.Unavailable, tt.unavailable)
			}
			for name, reason := range tt.skips {
				if got := skipOf(s, name); got.Reason != reason {
					t.Errorf("skip %s = %q (%s), want %q", name, got.Reason, got.Message, reason)
				}
			}
			if len(s.Targets)+len(s.Retry)+len(s.Skipped) != len(tt.nodes) {
				t.Errorf("%d targets, %d retries and %d skips for %d nodes", len(s.Targets), len(s.Retry), len(s.Skipped), len(tt.nodes))
			}
			if tt.wait != "" && s.Wait != tt.wait {
				t.Errorf("Wait = %q, want %q", s.Wait, tt.wait)
			}
		})
	}
}

func TestPlanSkipMessages(t *testing.T) {
	s := plan(t, pool(), nodes(
		node("done", at(newCfg)),
		node("working", updating(oldCfg, newCfg)),
		node("pending", annotate(oldCfg, newCfg, "", "")),
		node("failed", degraded(oldCfg, newCfg, "failed to drain node: pdb blocks eviction")),
		node("cordoned", at(oldCfg), cordoned()),
		node("waiting", at(oldCfg)),
	), rollout.Options{Retry: []string{"done"}})
	want := map[string]string{
		"done":     "done at rendered-worker-new; retry ignored: its update has not failed",
		"working":  "updating to rendered-worker-new (state Working)",
		"pending":  "targets rendered-worker-new; its agent has not picked the update up yet",
		"failed":   "failed to update to rendered-worker-new (state Degraded): failed to drain node: pdb blocks eviction",
		"cordoned": "node cordoned is reporting Unschedulable; it becomes a candidate once it is Ready and schedulable",
		"waiting":  "waiting for capacity: maxUnavailable is 1 and 3 nodes are unavailable (cordoned, pending, working), 1 failing at rendered-worker-new (failed)",
	}
	for name, msg := range want {
		if got := skipOf(s, name).Message; got != msg {
			t.Errorf("skip %s:\n got %q\nwant %q", name, got, msg)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	unrendered := pool()
	unrendered.Spec.Configuration.Name = ""
	_, err := rollout.Plan(unrendered, nodes(node("a")), rollout.Options{})
	if !errors.Is(err, rollout.ErrNoTarget) || !strings.Contains(err.Error(), "machineconfigpool worker: spec.configuration.name is empty") {
		t.Errorf("unrendered pool: err = %v", err)
	}
	// A target makes an unrendered pool plannable.
	if _, err := rollout.Plan(unrendered, nodes(node("a")), rollout.Options{Target: oldCfg}); err != nil {
		t.Errorf("unrendered pool with a target: %v", err)
	}

	_, err = rollout.Plan(pool(maxUnavailable(intstr.FromString("lots"))), nodes(node("a")), rollout.Options{})
	if err == nil || !strings.Contains(err.Error(), "machineconfigpool worker: spec.maxUnavailable lots") {
		t.Errorf("bad maxUnavailable: err = %v", err)
	}

	_, err = rollout.Plan(pool(), nodes(node("a")), rollout.Options{Retry: []string{"b"}})
	if err == nil || err.Error() != "machineconfigpool worker: cannot retry node b: it is not a member of the pool" {
		t.Errorf("retry of a stranger: err = %v", err)
	}

	_, err = rollout.Plan(pool(), nodes(node("a")), rollout.Options{Canary: -1})
	if err == nil || !strings.Contains(err.Error(), "canary -1 is negative") {
		t.Errorf("negative canary: err = %v", err)
	}
}

func TestEventMessage(t *testing.T) {
	one := rollout.Step{Target: newCfg, Targets: []string{"a"}}
	if got, want := one.EventMessage(), "Targeted node a to MachineConfig: rendered-worker-new"; got != want {
		t.Errorf("one target: %q, want %q", got, want)
	}
	two := rollout.Step{Target: newCfg, Targets: []string{"a", "b"}}
	if got, want := two.EventMessage(), "Set target for 2 nodes to MachineConfig: rendered-worker-new"; got != want {
		t.Errorf("two targets: %q, want %q", got, want)
	}
	if got := (rollout.Step{}).EventMessage(); got != "" {
		t.Errorf("no targets: %q", got)
	}
}

func TestRollbackTarget(t *testing.T) {
	got, err := rollout.RollbackTarget(pool())
	if err != nil || got != oldCfg {
		t.Errorf("RollbackTarget = %q, %v; want %q", got, err, oldCfg)
	}
	settled := pool()
	settled.Status.Configuration.Name = newCfg
	if _, err := rollout.RollbackTarget(settled); err == nil || !strings.Contains(err.Error(), "every node already runs rendered-worker-new") {
		t.Errorf("settled pool: err = %v", err)
	}
	fresh := pool()
	fresh.Status.Configuration.Name = ""
	if _, err := rollout.RollbackTarget(fresh); err == nil || !strings.Contains(err.Error(), "status.configuration is empty") {
		t.Errorf("fresh pool: err = %v", err)
	}
}

// TestPlanStoppedNodes: a node a failed hook of its own stopped (Options.Stopped) is
// not targeted and counts against maxUnavailable as a failed node does, whether it is
// still at the old config (its before-drain hook failed) or Done at the target (its
// after-node hook failed); the other nodes go on within what is left.
func TestPlanStoppedNodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stopped string
		want    []string
	}{
		{"before-drain", "n0", []string{"n1"}},
		{"after-node", "done", []string{"n0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pool(maxUnavailable(intstr.FromInt32(2)))
			ns := nodes(node("done", at(newCfg)), node("n0", at(oldCfg)), node("n1", at(oldCfg)), node("n2", at(oldCfg)))
			why := "hook " + tc.name + " for node " + tc.stopped + " failed: Job hooks/x-1"
			step := plan(t, p, ns, rollout.Options{Stopped: map[string]string{tc.stopped: why}})
			if !slices.Equal(step.Targets, tc.want) || step.Capacity != 1 {
				t.Errorf("targets %v capacity %d, want %v and 1 (maxUnavailable 2, one stopped)", step.Targets, step.Capacity, tc.want)
			}
			if !slices.Equal(step.Stopped, []string{tc.stopped}) {
				t.Errorf("Stopped %v", step.Stopped)
			}
			var sk *rollout.Skip
			for i := range step.Skipped {
				if step.Skipped[i].Node == tc.stopped {
					sk = &step.Skipped[i]
				}
			}
			if sk == nil || sk.Reason != rollout.SkipStopped || sk.Message != why {
				t.Errorf("skip of %s: %+v", tc.stopped, sk)
			}
			if !strings.Contains(step.Wait, "1 stopped by a failed hook ("+tc.stopped+")") {
				t.Errorf("wait %q does not name the stopped node", step.Wait)
			}
		})
	}
}
