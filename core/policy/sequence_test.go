package policy

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// seqPool is a pool with annotations; updated and busy are what its status says.
func seqPool(name string, updated, busy bool, anns map[string]string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: anns}}
	p.Status.MachineCount = 3
	if updated {
		p.Status.UpdatedMachineCount = 3
	}
	if busy {
		p.Status.UpdatedMachineCount, p.Status.UnavailableMachineCount = 1, 1
	}
	p.Spec.Configuration.Name = "rendered-" + name + "-new"
	return p
}

func TestSequenceCheck(t *testing.T) {
	wait := map[string]string{WaitForPoolsKey: "canary"}
	group := map[string]string{ExclusiveGroupKey: "apps"}
	updatedOf := func(p *mcfgv1.MachineConfigPool) bool { return p.Status.UpdatedMachineCount == p.Status.MachineCount }
	for _, tc := range []struct {
		name  string
		pool  *mcfgv1.MachineConfigPool
		pools []*mcfgv1.MachineConfigPool
		want  string // "" passes
	}{
		{"canary not updated", seqPool("worker", false, false, wait),
			[]*mcfgv1.MachineConfigPool{seqPool("canary", false, true, nil)}, "waiting for pool canary to be updated (1 of 3 machines updated to rendered-canary-new)"},
		{"canary updated", seqPool("worker", false, false, wait),
			[]*mcfgv1.MachineConfigPool{seqPool("canary", true, false, nil)}, ""},
		{"canary missing", seqPool("worker", false, false, wait), nil, "waiting for pool canary (mcotui.io/wait-for-pools), which does not exist"},
		{"cycle", seqPool("worker", false, false, wait),
			[]*mcfgv1.MachineConfigPool{seqPool("canary", false, false, map[string]string{WaitForPoolsKey: "worker"})}, "wait for each other"},
		{"other of the group busy", seqPool("apps", false, false, group),
			[]*mcfgv1.MachineConfigPool{seqPool("infra", false, true, group)}, "pool infra of exclusive group apps is updating"},
		{"other of another group busy", seqPool("apps", false, false, group),
			[]*mcfgv1.MachineConfigPool{seqPool("infra", false, true, map[string]string{ExclusiveGroupKey: "other"})}, ""},
		{"both want to start: the first by name goes", seqPool("infra", false, false, group),
			[]*mcfgv1.MachineConfigPool{seqPool("apps", false, false, group)}, "pool apps of exclusive group apps goes first (by name)"},
		{"both want to start: the first by name", seqPool("apps", false, false, group),
			[]*mcfgv1.MachineConfigPool{seqPool("infra", false, false, group)}, ""},
		{"busy itself: goes on", seqPool("infra", false, true, group),
			[]*mcfgv1.MachineConfigPool{seqPool("apps", false, false, group)}, ""},
	} {
		pol, err := FromPool(tc.pool)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := pol.Gates.Sequence.Check(tc.pool, append(tc.pools, tc.pool), updatedOf, PoolBusy)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Check = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSequenceAndHealthParseErrors(t *testing.T) {
	for _, tc := range []struct {
		anns map[string]string
		want string
	}{
		{map[string]string{WaitForPoolsKey: "worker"}, "annotation mcotui.io/wait-for-pools: the pool cannot wait for itself"},
		{map[string]string{WaitForPoolsKey: "canary,,x"}, "empty pool name"},
		{map[string]string{WaitForPoolsKey: "Canary_1"}, `"Canary_1" is not a pool name`},
		{map[string]string{ExclusiveGroupKey: "a b"}, `"a b" is not a group name`},
		{map[string]string{HaltUnhealthyKey: "two"}, `annotation mcotui.io/halt-unhealthy-nodes: "two" is not a count`},
		{map[string]string{HaltUnhealthyKey: "0"}, "want 1 or more"},
		{map[string]string{HealthChecksKey: "{}"}, "not a list of health checks"},
		{map[string]string{HealthChecksKey: `[{"apiVersion":"ceph.rook.io/v1","kind":"CephCluster","objectName":"rook","expression":"object.status.health =="}]`},
			`pool worker annotation mcotui.io/health-checks: check 1 (cephcluster/rook): expression "object.status.health ==": does not compile`},
		{map[string]string{HealthChecksKey: `[{"name":"ceph","kind":"CephCluster","objectName":"rook","expression":"true"}]`}, "check 1 (ceph): needs apiVersion and kind"},
		{map[string]string{HealthChecksKey: `[{"apiVersion":"v1","kind":"ConfigMap","expression":"true"}]`}, "needs one of objectName and selector"},
		{map[string]string{HealthChecksKey: `[{"apiVersion":"v1","kind":"ConfigMap","objectName":"x","expression":"true","expresion":"x"}]`}, `unknown field "expresion"`},
	} {
		_, err := FromPool(pool(tc.anns))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.anns, err, tc.want)
		}
	}
}

func TestHealthChecks(t *testing.T) {
	p, err := FromPool(pool(map[string]string{HealthChecksKey: `
- name: ceph
  apiVersion: ceph.rook.io/v1
  kind: CephCluster
  namespace: rook-ceph
  selector: app=ceph
  expression: object.status.health == 'HEALTH_OK'
`}))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Gates
	obj := func(name, health string) CheckObject {
		return CheckObject{Namespace: "rook-ceph", Name: name, Object: map[string]any{"status": map[string]any{"health": health}}}
	}
	for _, tc := range []struct {
		r    CheckResult
		want string
	}{
		{CheckResult{Objects: []CheckObject{obj("a", "HEALTH_OK"), obj("b", "HEALTH_OK")}}, ""},
		{CheckResult{Objects: []CheckObject{obj("a", "HEALTH_OK"), obj("b", "HEALTH_WARN")}}, "health check ceph: cephcluster rook-ceph/b is not healthy (object.status.health == 'HEALTH_OK' is false)"},
		{CheckResult{}, "health check ceph: no CephCluster matches app=ceph"},
		{CheckResult{Objects: []CheckObject{{Name: "c", Object: map[string]any{}}}}, "health check ceph: cephcluster c: object.status.health == 'HEALTH_OK': no such key: status"},
	} {
		got, _ := g.Check(Evidence{Checks: []CheckResult{tc.r}})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Check = %q, want %q", got, tc.want)
		}
	}
	if got := g.Halt(Evidence{Unhealthy: []string{"a"}}); got != "" {
		t.Errorf("Halt without the annotation = %q", got)
	}
	g.HaltUnhealthy = 2
	if got := g.Halt(Evidence{Unhealthy: []string{"a"}}); got != "" {
		t.Errorf("Halt at 1 of 2 = %q", got)
	}
	if got, want := g.Halt(Evidence{Unhealthy: []string{"a", "b"}}), "2 nodes updated by this rollout are unhealthy (mcotui.io/halt-unhealthy-nodes is 2): a, b"; got != want {
		t.Errorf("Halt = %q, want %q", got, want)
	}
}
