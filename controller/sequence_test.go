package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// sequenceRecorder watches the nodes and pools of a test: which pools had a node
// updating at each change, and the RolloutHeld messages each pool showed.
type sequenceRecorder struct {
	mu       sync.Mutex
	pools    []string
	nodes    map[string]*corev1.Node
	targets  map[string]string // pool -> target config whose arrival is recorded
	started  map[string]int    // pool -> the change at which its first node was given its target
	done     map[string]int    // pool -> the change at which its last node was Done at its target
	overlaps []string          // changes at which two pools of the exclusive group were updating
	held     map[string][]string
	change   int
}

func (r *sequenceRecorder) poolOf(node string) string {
	for _, p := range r.pools {
		if strings.HasPrefix(node, p+"-") {
			return p
		}
	}
	return ""
}

func (r *sequenceRecorder) observeNode(n *corev1.Node, exclusive []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pool := r.poolOf(n.Name)
	if pool == "" {
		return
	}
	r.nodes[n.Name] = n
	r.change++
	busy := map[string]bool{}
	doneAll := map[string]bool{}
	seen := map[string]int{}
	for name := range r.nodes {
		seen[r.poolOf(name)]++
	}
	for _, p := range r.pools {
		doneAll[p] = seen[p] == 2 // createNodes makes two per pool
	}
	for name, m := range r.nodes {
		p := r.poolOf(name)
		target := r.targets[p]
		if nodeanno.Desired(m) != nodeanno.Current(m) {
			busy[p] = true
		}
		if target == "" || !rollout.DoneAt(m, target) {
			doneAll[p] = false
		}
		if target != "" && nodeanno.Desired(m) == target {
			if _, ok := r.started[p]; !ok {
				r.started[p] = r.change
			}
		}
	}
	for p, d := range doneAll {
		if _, ok := r.done[p]; !ok && d {
			r.done[p] = r.change
		}
	}
	var both []string
	for _, p := range exclusive {
		if busy[p] {
			both = append(both, p)
		}
	}
	if len(both) > 1 {
		r.overlaps = append(r.overlaps, fmt.Sprintf("change %d: %v updating at once", r.change, both))
	}
}

func (r *sequenceRecorder) observePool(p *mcfgv1.MachineConfigPool) {
	c := poolCondition(p, policy.HeldCondition)
	if c == nil || c.Status != corev1.ConditionTrue {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := c.Reason + ": " + c.Message
	if h := r.held[p.Name]; len(h) == 0 || h[len(h)-1] != msg {
		r.held[p.Name] = append(h, msg)
	}
}

// TestPoolOrder rolls three pools out at once: a canary, and two pools that wait for
// it and share an exclusive group. No node of the two is targeted before the canary is
// updated, they never have nodes updating at the same time, the one first by name
// goes first, and each says why it waits in RolloutHeld.
func TestPoolOrder(t *testing.T) {
	canary, apps, infra := "sqcanary", "sqapps", "sqinfra"
	r := &sequenceRecorder{pools: []string{canary, apps, infra}, nodes: map[string]*corev1.Node{}, targets: map[string]string{},
		started: map[string]int{}, done: map[string]int{}, held: map[string][]string{}}
	exclusive := []string{apps, infra}
	var mcs []*mcfgv1.MachineConfig
	for _, name := range r.pools {
		p := createPool(t, name, ptr.To(intstr.FromInt32(1)), false)
		mc := machineConfig(t, "00-"+name, name, "/etc/"+name, "v1")
		mcs = append(mcs, mc)
		r.targets[name] = expectedRendered(t, p, mc)
		createNodes(t, name, "rendered-"+name+"-old", "", "")
		startFakeAgent(t, name, 300*time.Millisecond)
	}
	annotatePool(t, apps, map[string]any{policy.WaitForPoolsKey: canary, policy.ExclusiveGroupKey: "sq"})
	annotatePool(t, infra, map[string]any{policy.WaitForPoolsKey: canary, policy.ExclusiveGroupKey: "sq"})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nw, err := env.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); nw.Stop(); pw.Stop(); wg.Wait() })
	wg.Go(func() {
		for ev := range nw.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok {
				r.observeNode(n, exclusive)
			}
		}
	})
	wg.Go(func() {
		for ev := range pw.ResultChan() {
			if p, ok := ev.Object.(*mcfgv1.MachineConfigPool); ok {
				r.observePool(p)
			}
		}
	})
	for _, mc := range mcs {
		applyMC(t, mc)
	}
	startController(t, "lease-sq", "sq-ctrl")
	for _, name := range r.pools {
		waitRolledOut(t, name, r.targets[name], []string{name + "-0", name + "-1"}, 30*time.Second)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	t.Logf("started at change %v, done at change %v; held: %q", r.started, r.done, r.held)
	for _, o := range r.overlaps {
		t.Errorf("exclusive group sq: %s", o)
	}
	for _, p := range exclusive {
		if r.started[p] <= r.done[canary] {
			t.Errorf("pool %s was given its target at change %d, before the canary was done (change %d)", p, r.started[p], r.done[canary])
		}
	}
	if r.started[infra] <= r.done[apps] {
		t.Errorf("pool %s started at change %d, before %s (first by name) was done at change %d", infra, r.started[infra], apps, r.done[apps])
	}
	for _, p := range r.pools {
		if _, ok := r.done[p]; !ok {
			t.Errorf("pool %s was never seen done", p)
		}
	}
	for _, want := range []struct{ pool, msg string }{
		{apps, "WaitingForPool: waiting for pool sqcanary to be updated"},
		{infra, "WaitingForPool: waiting for pool sqcanary to be updated"},
		{infra, "WaitingForPool: pool sqapps of exclusive group sq"},
	} {
		found := false
		for _, m := range r.held[want.pool] {
			found = found || strings.Contains(m, want.msg)
		}
		if !found {
			t.Errorf("pool %s never said %q in RolloutHeld; it said %q", want.pool, want.msg, r.held[want.pool])
		}
	}
}
