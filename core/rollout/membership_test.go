package rollout_test

import (
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

func selecting(name, label string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{label: ""},
		}},
	}
}

func labelled(name string, labels ...string) *corev1.Node {
	n := node(name)
	for _, l := range labels {
		n.Labels[l] = ""
	}
	return n
}

const (
	roleWorker = "node-role.kubernetes.io/worker"
	roleMaster = "node-role.kubernetes.io/master"
	roleInfra  = "node-role.kubernetes.io/infra"
	roleGPU    = "node-role.kubernetes.io/gpu"
)

func TestPoolForPrecedence(t *testing.T) {
	worker, master := selecting(rollout.WorkerPool, roleWorker), selecting(rollout.MasterPool, roleMaster)
	infra, gpu := selecting("infra", roleInfra), selecting("gpu", roleGPU)
	empty := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{}}}
	pools := []*mcfgv1.MachineConfigPool{worker, master, infra, gpu, empty}
	for _, tc := range []struct {
		node *corev1.Node
		want string // "" for no pool
	}{
		{labelled("w", roleWorker), "worker"},
		{labelled("m", roleWorker, roleMaster, roleInfra), "master"},
		{labelled("i", roleWorker, roleInfra), "infra"},
		{labelled("none"), ""},
	} {
		p, err := rollout.PoolFor(tc.node, pools)
		if err != nil {
			t.Fatalf("PoolFor(%s): %v", tc.node.Name, err)
		}
		got := ""
		if p != nil {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("PoolFor(%s) = %q, want %q", tc.node.Name, got, tc.want)
		}
	}
	_, err := rollout.PoolFor(labelled("both", roleWorker, roleInfra, roleGPU), pools)
	if err == nil || !strings.Contains(err.Error(), "node both is selected by the custom pools gpu, infra") {
		t.Errorf("a node in two custom pools: err = %v, want one naming the node and both pools", err)
	}
}

func TestMembers(t *testing.T) {
	worker, infra, gpu := selecting(rollout.WorkerPool, roleWorker), selecting("infra", roleInfra), selecting("gpu", roleGPU)
	pools := []*mcfgv1.MachineConfigPool{worker, infra, gpu}
	all := []*corev1.Node{
		labelled("w-2", roleWorker), labelled("w-1", roleWorker), labelled("i-1", roleWorker, roleInfra),
		labelled("x-1", roleWorker, roleInfra, roleGPU), nil,
	}
	names := func(ns []*corev1.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	got, problems := rollout.Members(worker, pools, all)
	if want := []string{"w-1", "w-2"}; !slices.Equal(names(got), want) {
		t.Errorf("members of worker = %v, want %v (an infra node belongs to infra)", names(got), want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "x-1") {
		t.Errorf("problems of worker = %v, want one naming x-1", problems)
	}
	got, _ = rollout.Members(infra, pools, all)
	if want := []string{"i-1"}; !slices.Equal(names(got), want) {
		t.Errorf("members of infra = %v, want %v", names(got), want)
	}
}

func TestPlanningView(t *testing.T) {
	fresh, configured := node("fresh"), node("configured", at(oldCfg))
	view := rollout.PlanningView([]*corev1.Node{fresh, configured})
	if !rollout.IsUnenrolled(fresh) || rollout.IsUnenrolled(configured) {
		t.Fatal("IsUnenrolled: want true for a node without annotations only")
	}
	if len(fresh.Annotations) != 0 {
		t.Errorf("PlanningView changed its input: %v", fresh.Annotations)
	}
	if view[1] != configured {
		t.Error("PlanningView copied a configured node; want it as it is")
	}
	v := view[0]
	if !rollout.Done(v) || rollout.Unavailable(v) || !rollout.IsPlaceholder(nodeanno.Current(v)) {
		t.Errorf("unenrolled node in the view: annotations %v, want Done, available, at the placeholder", v.Annotations)
	}
	if rollout.ConfigName(nodeanno.Current(v)) != "" || rollout.ConfigName(oldCfg) != oldCfg {
		t.Error("ConfigName: want the placeholder shown as no config and a rendered config as it is")
	}
	step, err := rollout.Plan(pool(), view, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, []string{"configured"}) && !slices.Equal(step.Targets, []string{"fresh"}) {
		t.Errorf("step over the view targets %v, want one node (maxUnavailable 1), the unenrolled node a candidate like any", step.Targets)
	}
}

// TestRolePoolIsPoolFor: a node's pool by its role labels alone is the one PoolFor
// finds among pools that select on those labels (MCO's master and worker pools, and
// custom pools by the same convention), with control-plane counting as master.
func TestRolePoolIsPoolFor(t *testing.T) {
	pools := []*mcfgv1.MachineConfigPool{
		selecting("master", rollout.NodeRolePrefix+"master"), selecting("worker", rollout.NodeRolePrefix+"worker"),
		selecting("infra", rollout.NodeRolePrefix+"infra"), selecting("gpu", rollout.NodeRolePrefix+"gpu"),
	}
	for _, c := range []struct {
		roles   []string
		want    string
		wantErr string
	}{
		{nil, "worker", ""},
		{[]string{"worker"}, "worker", ""},
		{[]string{"worker", "infra"}, "infra", ""},
		{[]string{"master", "worker"}, "master", ""},
		{[]string{"master", "infra"}, "master", ""},
		{[]string{"control-plane", "infra"}, "master", ""},
		{[]string{"master", "control-plane"}, "master", ""},
		{[]string{"infra", "gpu", "worker"}, "", "node n has the roles gpu, infra: a node belongs to at most one custom pool"},
		// MCO refuses a node of two custom pools even when it is a master.
		{[]string{"master", "infra", "gpu"}, "", "node n has the roles gpu, infra: a node belongs to at most one custom pool"},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"kubernetes.io/hostname": "n"}}}
		for _, r := range c.roles {
			node.Labels[rollout.NodeRolePrefix+r] = ""
		}
		got, err := rollout.RolePool(node)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("roles %v: pool %q, error %v; want the error %q", c.roles, got, err, c.wantErr)
			}
			if _, perr := rollout.PoolFor(node, pools); perr == nil {
				t.Errorf("roles %v: RolePool refuses the node, PoolFor places it", c.roles)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("roles %v: pool %q, %v; want %q", c.roles, got, err, c.want)
		}
		if slices.Contains(c.roles, "control-plane") || len(c.roles) == 0 {
			continue // no pool in pools selects on control-plane, nor a node without roles
		}
		if p, err := rollout.PoolFor(node, pools); err != nil || p.Name != got {
			t.Errorf("roles %v: RolePool %q, PoolFor %v, %v", c.roles, got, p, err)
		}
	}
}

func TestRoleOf(t *testing.T) {
	for label, want := range map[string]string{
		rollout.NodeRolePrefix + "worker": "worker", rollout.NodeRolePrefix + "infra": "infra",
		rollout.NodeRolePrefix + "master": "master", rollout.NodeRolePrefix + "control-plane": "master",
		"kubernetes.io/hostname": "",
	} {
		if got, ok := rollout.RoleOf(label); got != want || ok != (want != "") {
			t.Errorf("RoleOf(%q) = %q, %v; want %q", label, got, ok, want)
		}
	}
}
