package controller

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
)

// TestPhaseWatchPlacesNodesByMCOsPrecedence: the phase watch counts a node in the pool
// rollout.PoolFor gives it (master before a custom pool before worker; none for a
// node two custom pools select), for its notifications' estimate and RolloutDone. Its
// own poolOf took whichever matching pool it met first unless that was worker, so a
// node of master and infra could be counted in infra, and one of two custom pools in
// either. The informers are only read (their stores filled by hand): no client.
func TestPhaseWatchPlacesNodesByMCOsPrecedence(t *testing.T) {
	w := newRolloutInformers(kubeinformers.NewSharedInformerFactory(nil, 0), mcfginformers.NewSharedInformerFactory(nil, 0))
	for _, name := range []string{"edge", "infra", "master", "worker"} {
		p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}}}
		if err := w.pools.Informer().GetStore().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[string][]string{ // node: its roles
		"m-infra": {"master", "infra"}, "w-infra": {"worker", "infra"}, "two-custom": {"infra", "edge", "worker"}, "w": {"worker"},
	}
	for name, roles := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		for _, r := range roles {
			n.Labels["node-role.kubernetes.io/"+r] = ""
		}
		if err := w.nodes.Informer().GetStore().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	pw := &phaseWatch{informers: w}
	want := map[string]string{"m-infra": "master", "w-infra": "infra", "two-custom": "", "w": "worker"}
	for name, pool := range want {
		n, _ := w.nodes.Lister().Get(name)
		got := ""
		if p := pw.poolOf(n); p != nil {
			got = p.Name
		}
		if got != pool {
			t.Errorf("node %s (roles %v): pool %q, want %q", name, nodes[name], got, pool)
		}
	}
	members := map[string][]string{"worker": {"w"}, "infra": {"w-infra"}, "master": {"m-infra"}, "edge": nil}
	for pool, want := range members {
		p, _ := w.pools.Lister().Get(pool)
		var got []string
		for _, n := range pw.members(p) {
			got = append(got, n.Name)
		}
		if len(got) != len(want) || (len(want) == 1 && got[0] != want[0]) {
			t.Errorf("pool %s: members %v, want %v", pool, got, want)
		}
	}
}
