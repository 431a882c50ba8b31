package rollout_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

func TestCheckReady(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"ready", node("n"), ""},
		{"not ready", node("n", notReady()), "node n is reporting NotReady=False"},
		{"ready unknown", node("n", condition(corev1.NodeReady, corev1.ConditionUnknown)), "node n is reporting NotReady=Unknown"},
		{"disk pressure", node("n", condition(corev1.NodeDiskPressure, corev1.ConditionTrue)), "node n is reporting OutOfDisk=True"},
		{"network unavailable", node("n", condition(corev1.NodeNetworkUnavailable, corev1.ConditionUnknown)), "node n is reporting NetworkUnavailable=Unknown"},
		{"cordoned by an administrator", node("n", cordoned()), "node n is reporting Unschedulable"},
		{"cordoned by the agent", node("n", cordonedByAgent()), "node n is reporting Unschedulable"},
		{"no Ready condition", func() *corev1.Node { n := node("n"); n.Status.Conditions = nil; return n }(), "node n reports no Ready condition yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := rollout.CheckReady(tt.node); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckReady = %q, want %q", got, tt.want)
			}
			if rollout.Ready(tt.node) != (tt.want == "") {
				t.Errorf("Ready = %t, want %t", rollout.Ready(tt.node), tt.want == "")
			}
		})
	}
}

// TestNodeStates covers MCO's IsUnavailableForUpdate, IsNodeDone, IsNodeMCDFailing and
// getDegradedMachines, one node state per row.
func TestNodeStates(t *testing.T) {
	tests := []struct {
		name                                 string
		node                                 *corev1.Node
		done, doneAtNew, failing, degr, unav bool
	}{
		{name: "done at old", node: node("n", at(oldCfg)), done: true},
		{name: "done at new", node: node("n", at(newCfg)), done: true, doneAtNew: true},
		{name: "working", node: node("n", updating(oldCfg, newCfg)), unav: true},
		{name: "targeted, agent has not started", node: node("n", annotate(oldCfg, newCfg, nodeanno.StateDone, "")), unav: true},
		{name: "new node without annotations", node: node("n"), unav: true},
		{name: "degraded on the way", node: node("n", degraded(oldCfg, newCfg, "boom")), failing: true, degr: true},
		{name: "unreconcilable", node: node("n", annotate(oldCfg, newCfg, nodeanno.StateUnreconcilable, "disks")), failing: true, degr: true},
		// Drift: current equals desired, so MCO does not treat the node as failing and
		// counts it as unavailable, yet reports it degraded.
		{name: "degraded by drift", node: node("n", annotate(newCfg, newCfg, nodeanno.StateDegraded, "content mismatch")), degr: true, unav: true},
		{name: "done but not ready", node: node("n", at(newCfg), notReady()), done: true, doneAtNew: true, unav: true},
		{name: "done but cordoned", node: node("n", at(newCfg), cordoned()), done: true, doneAtNew: true, unav: true},
		{name: "degraded and not ready", node: node("n", degraded(oldCfg, newCfg, "x"), notReady()), failing: true, degr: true, unav: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(what string, got, want bool) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %t, want %t", what, got, want)
				}
			}
			check("Done", rollout.Done(tt.node), tt.done)
			check("DoneAt(new)", rollout.DoneAt(tt.node, newCfg), tt.doneAtNew)
			check("Failing", rollout.Failing(tt.node), tt.failing)
			check("Degraded", rollout.Degraded(tt.node), tt.degr)
			check("Unavailable", rollout.Unavailable(tt.node), tt.unav)
		})
	}
}

func TestOrder(t *testing.T) {
	in := nodes(
		node("nozone-young", age(30)),
		node("b-young", zone("b"), age(20)),
		node("nozone-old", age(1)),
		node("a-2", zone("a"), age(10)),
		node("a-1", zone("a"), age(10)),
		nil,
		node("b-old", zone("b"), age(0)),
		node("a-old", zone("a"), age(5)),
	)
	var got []string
	for _, n := range rollout.Order(in) {
		got = append(got, n.Name)
	}
	want := []string{"a-old", "a-1", "a-2", "b-old", "b-young", "nozone-old", "nozone-young"}
	if !slices.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
}
