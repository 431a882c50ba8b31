package rollout_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/rollout"
)

// waveNames is the forecast's waves as node names.
func waveNames(f rollout.Forecast) [][]string {
	var out [][]string
	for _, w := range f.Waves {
		var ns []string
		for _, c := range w.Nodes {
			ns = append(ns, c.Node)
		}
		out = append(out, ns)
	}
	return out
}

func sameWaves(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func blockedOf(f rollout.Forecast) map[string]rollout.SkipReason {
	out := map[string]rollout.SkipReason{}
	for _, b := range f.Blocked {
		out[b.Node] = b.Reason
	}
	return out
}

func reboot() disruption.Decision {
	return disruption.Decision{Actions: []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.RebootStatusAction}}, Drain: true}
}

func TestPreviewWaves(t *testing.T) {
	two := maxUnavailable(intstr.FromInt32(2))
	tests := []struct {
		name    string
		pool    *poolT
		nodes   []*nodeT
		opts    rollout.Options
		waves   [][]string
		canary  []bool
		blocked map[string]rollout.SkipReason
		paused  bool
		// inFlight is Forecast.InFlight; after, the first wave's AfterInFlight.
		inFlight []string
		after    bool
	}{
		{
			name:  "waves of maxUnavailable in rollout order",
			pool:  pool(two),
			nodes: nodes(node("e", at(oldCfg), zone("b")), node("d", at(oldCfg), zone("a")), node("c", at(oldCfg)), node("b", at(oldCfg), zone("a")), node("a", at(oldCfg), zone("b"))),
			waves: [][]string{{"b", "d"}, {"a", "e"}, {"c"}},
		},
		{
			name:     "an updating node finishes with the first wave",
			pool:     pool(two),
			nodes:    nodes(node("a", updating(oldCfg, newCfg), cordonedByAgent()), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			waves:    [][]string{{"b"}, {"c", "d"}},
			inFlight: []string{"a"},
		},
		{
			// Mid-rollout: a and b hold all of maxUnavailable, so Plan targets nothing
			// now; the forecast lets them finish and goes on.
			name:     "updates in flight holding all of maxUnavailable finish before the first wave",
			pool:     pool(two),
			nodes:    nodes(node("a", updating(oldCfg, newCfg), cordonedByAgent()), node("b", annotate(oldCfg, newCfg, "", "")), node("c", at(oldCfg)), node("d", at(oldCfg)), node("e", at(oldCfg))),
			waves:    [][]string{{"c", "d"}, {"e"}},
			inFlight: []string{"a", "b"},
			after:    true,
		},
		{
			name:     "maxUnavailable 1 mid-rollout",
			pool:     pool(),
			nodes:    nodes(node("a", at(newCfg)), node("b", updating(oldCfg, newCfg), cordonedByAgent()), node("c", at(oldCfg)), node("d", at(oldCfg))),
			waves:    [][]string{{"c"}, {"d"}},
			inFlight: []string{"b"},
			after:    true,
		},
		{
			// The canary is in flight: once it is Done the canary phase is over.
			name:     "the canary in flight finishes, then the rest",
			pool:     pool(two),
			nodes:    nodes(node("a", updating(oldCfg, newCfg)), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			opts:     rollout.Options{Canary: 1},
			waves:    [][]string{{"b", "c"}, {"d"}},
			canary:   []bool{false, false},
			inFlight: []string{"a"},
			after:    true,
		},
		{
			// An update in flight to an older config finishes there, then the node is
			// targeted like the others.
			name:     "an update in flight to an older config",
			pool:     pool(),
			nodes:    nodes(node("a", updating("rendered-worker-older", oldCfg)), node("b", at(oldCfg))),
			waves:    [][]string{{"a"}, {"b"}},
			inFlight: []string{"a"},
			after:    true,
		},
		{
			// a finishes but stays cordoned by an administrator: it keeps the pool's
			// one unit of capacity, so there is still nothing to target.
			name:     "in flight on an administrator-cordoned node: no wave after it",
			pool:     pool(),
			nodes:    nodes(node("a", updating(oldCfg, newCfg), cordoned()), node("b", at(oldCfg))),
			inFlight: []string{"a"},
			blocked:  map[string]rollout.SkipReason{"b": rollout.SkipNoCapacity},
		},
		{
			// A failed node is not in flight: it does not finish, and it starves the pool.
			name:     "a failed node is not in flight",
			pool:     pool(two),
			nodes:    nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", updating(oldCfg, newCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			waves:    [][]string{{"c"}, {"d"}},
			inFlight: []string{"b"},
			after:    true,
			blocked:  map[string]rollout.SkipReason{"a": rollout.SkipAtTarget},
		},
		{
			name:   "canary first",
			pool:   pool(two),
			nodes:  nodes(node("a", at(oldCfg)), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			opts:   rollout.Options{Canary: 1},
			waves:  [][]string{{"a"}, {"b", "c"}, {"d"}},
			canary: []bool{true, false, false},
		},
		{
			name:    "a NotReady node is blocked and holds a unit of capacity throughout",
			pool:    pool(two),
			nodes:   nodes(node("a", at(oldCfg), notReady()), node("b", at(oldCfg)), node("c", at(oldCfg))),
			waves:   [][]string{{"b"}, {"c"}},
			blocked: map[string]rollout.SkipReason{"a": rollout.SkipNotReady},
		},
		{
			// a reaches the target but stays cordoned, so it keeps a unit of capacity.
			name:     "an administrator's cordon stays after the wave",
			pool:     pool(two),
			nodes:    nodes(node("a", updating(oldCfg, newCfg), cordoned()), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			waves:    [][]string{{"b"}, {"c"}, {"d"}},
			inFlight: []string{"a"},
		},
		{
			// OpenShift: MCO cordoned a for its update and uncordons it after, so a is
			// not an administrator's and frees its unit of capacity.
			name:     "MCO's cordon ends with the wave",
			pool:     pool(two),
			nodes:    nodes(node("a", updating(oldCfg, newCfg), cordonedByMCO(newCfg)), node("b", at(oldCfg)), node("c", at(oldCfg)), node("d", at(oldCfg))),
			waves:    [][]string{{"b"}, {"c", "d"}},
			inFlight: []string{"a"},
		},
		{
			name:    "a node failing at the target starves a pool of one",
			pool:    pool(),
			nodes:   nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", at(oldCfg))),
			blocked: map[string]rollout.SkipReason{"a": rollout.SkipAtTarget, "b": rollout.SkipNoCapacity},
		},
		{
			name:  "retrying it unblocks the pool",
			pool:  pool(),
			nodes: nodes(node("a", degraded(oldCfg, newCfg, "boom")), node("b", at(oldCfg))),
			opts:  rollout.Options{Retry: []string{"a"}},
			waves: [][]string{{"a"}, {"b"}},
		},
		{
			name:   "a paused pool is forecast as if resumed",
			pool:   pool(paused()),
			nodes:  nodes(node("a", at(oldCfg)), node("b", at(oldCfg))),
			waves:  [][]string{{"a"}, {"b"}},
			paused: true,
		},
		{
			name:  "nothing to do",
			pool:  pool(),
			nodes: nodes(node("a", at(newCfg))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := rollout.Preview(tt.pool, tt.nodes, tt.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := waveNames(f); !sameWaves(got, tt.waves) {
				t.Errorf("waves = %v, want %v", got, tt.waves)
			}
			if tt.canary != nil {
				for i, w := range f.Waves {
					if w.Canary != tt.canary[i] {
						t.Errorf("wave %d canary = %t, want %t", i, w.Canary, tt.canary[i])
					}
				}
			}
			got := blockedOf(f)
			if len(got) != len(tt.blocked) {
				t.Errorf("blocked = %+v, want %v", f.Blocked, tt.blocked)
			}
			for n, r := range tt.blocked {
				if got[n] != r {
					t.Errorf("blocked %s = %q, want %q (%+v)", n, got[n], r, f.Blocked)
				}
			}
			if !slices.Equal(f.InFlight, tt.inFlight) {
				t.Errorf("InFlight = %v, want %v", f.InFlight, tt.inFlight)
			}
			for i, w := range f.Waves {
				if want := i == 0 && tt.after; w.AfterInFlight != want {
					t.Errorf("wave %d AfterInFlight = %t, want %t", i+1, w.AfterInFlight, want)
				}
			}
			if f.Paused != tt.paused {
				t.Errorf("Paused = %t, want %t", f.Paused, tt.paused)
			}
		})
	}
}

// TestPreviewDisruption feeds Preview a DiffFunc built from configdiff and the default
// node disruption policy, the way `mcotui rollout` does.
func TestPreviewDisruption(t *testing.T) {
	file := func(path, data string) types.File {
		src := "data:," + data
		return types.File{Node: types.Node{Path: path}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}}}
	}
	cfg := func(name string, kargs []string, files ...types.File) configdiff.Config {
		ign := ignconfig.Empty()
		ign.Storage.Files = files
		return configdiff.Config{Name: name, Ignition: ign, KernelArguments: kargs}
	}
	configs := map[string]configdiff.Config{
		oldCfg:        cfg(oldCfg, nil, file("/etc/containers/registries.d/a.yaml", "a")),
		"rendered-ka": cfg("rendered-ka", []string{"nosmt"}, file("/etc/containers/registries.d/a.yaml", "a")),
		newCfg:        cfg(newCfg, nil, file("/etc/containers/registries.d/a.yaml", "b")),
	}
	calls := map[string]int{}
	diff := func(from, to string) (disruption.Decision, error) {
		calls[from+"->"+to]++
		o, ok := configs[from]
		if !ok {
			return disruption.Decision{}, fmt.Errorf("rendered config %q not found", from)
		}
		return disruption.Evaluate(disruption.DefaultPolicy(), configdiff.Compute(o, configs[to])), nil
	}
	f, err := rollout.Preview(pool(maxUnavailable(intstr.FromString("50%"))), nodes(
		node("a", at(oldCfg)), node("b", at(oldCfg)), node("c", at("rendered-ka")), node("d", at("rendered-gone")),
	), rollout.Options{}, diff)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range f.Waves {
		for _, c := range w.Nodes {
			line := fmt.Sprintf("%s %s->%s: %s drain=%t", c.Node, c.From, c.To, disruption.Join(c.Decision.Actions), c.Decision.Drain)
			if c.Err != nil {
				line = fmt.Sprintf("%s %s->%s: error: %v", c.Node, c.From, c.To, c.Err)
			}
			got = append(got, line)
		}
	}
	want := []string{
		"a rendered-worker-old->rendered-worker-new: Reload crio.service drain=false",
		"b rendered-worker-old->rendered-worker-new: Reload crio.service drain=false",
		"c rendered-ka->rendered-worker-new: Reboot drain=true",
		`d rendered-gone->rendered-worker-new: error: rendered config "rendered-gone" not found`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("forecast:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if calls[oldCfg+"->"+newCfg] != 1 {
		t.Errorf("diff called %d times for the same pair, want once", calls[oldCfg+"->"+newCfg])
	}
}

func TestPreviewErrors(t *testing.T) {
	_, err := rollout.Preview(pool(maxUnavailable(intstr.FromString("x"))), nodes(node("a")), rollout.Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.maxUnavailable x") {
		t.Errorf("bad maxUnavailable: %v", err)
	}
	p := pool()
	p.Spec.Configuration.Name = ""
	if _, err := rollout.Preview(p, nil, rollout.Options{}, nil); !errors.Is(err, rollout.ErrNoTarget) {
		t.Errorf("unrendered pool: %v", err)
	}
}

// TestPreviewMatchesPlan checks the first wave of a forecast against Plan.
func TestPreviewMatchesPlan(t *testing.T) {
	p := pool(maxUnavailable(intstr.FromInt32(3)))
	ns := nodes(node("a", at(oldCfg), zone("z")), node("b", updating(oldCfg, newCfg)), node("c", at(oldCfg)), node("d", at(newCfg)), node("e", degraded("x", oldCfg, "r")))
	s := plan(t, p, ns, rollout.Options{})
	f, err := rollout.Preview(p, ns, rollout.Options{}, func(string, string) (disruption.Decision, error) { return reboot(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if w := waveNames(f); len(w) == 0 || !slices.Equal(w[0], s.Targets) {
		t.Errorf("first wave %v, Plan targets %v", w, s.Targets)
	}
	if !slices.Equal(f.AtTarget, []string{"d"}) {
		t.Errorf("AtTarget = %v", f.AtTarget)
	}
}
