package rollout_test

import (
	"errors"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

var (
	t0 = metav1.NewTime(epoch)
	t1 = metav1.NewTime(epoch.Add(time.Hour))
)

type counts struct{ machine, updated, ready, unavailable, degraded int32 }

func countsOf(s mcfgv1.MachineConfigPoolStatus) counts {
	return counts{s.MachineCount, s.UpdatedMachineCount, s.ReadyMachineCount, s.UnavailableMachineCount, s.DegradedMachineCount}
}

type cond struct {
	status          corev1.ConditionStatus
	reason, message string
}

func condOf(t *testing.T, s *mcfgv1.MachineConfigPoolStatus, ct mcfgv1.MachineConfigPoolConditionType) cond {
	t.Helper()
	c := rollout.FindCondition(s, ct)
	if c == nil {
		t.Fatalf("no %s condition in %+v", ct, s.Conditions)
	}
	return cond{c.Status, c.Reason, c.Message}
}

func TestStatus(t *testing.T) {
	updatedMsg := "All nodes are updated with MachineConfig rendered-worker-new"
	updatingMsg := "All nodes are updating to MachineConfig rendered-worker-new"
	tests := []struct {
		name                                  string
		pool                                  *poolT
		nodes                                 []*nodeT
		counts                                counts
		updated, updating, nodeDegr, degraded cond
		configuration                         string
	}{
		{
			name:          "all updated",
			pool:          pool(),
			nodes:         nodes(node("a", at(newCfg)), node("b", at(newCfg)), node("c", at(newCfg))),
			counts:        counts{3, 3, 3, 0, 0},
			updated:       cond{corev1.ConditionTrue, "", updatedMsg},
			updating:      cond{status: corev1.ConditionFalse},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionFalse},
			configuration: newCfg,
		},
		{
			// The example of `oc get mcp` in the OpenShift docs: UPDATEDMACHINECOUNT
			// 2, READYMACHINECOUNT 2, one node still updating.
			name:          "one node updating",
			pool:          pool(),
			nodes:         nodes(node("a", at(newCfg)), node("b", at(newCfg)), node("c", updating(oldCfg, newCfg), cordonedByAgent())),
			counts:        counts{3, 2, 2, 1, 0},
			updated:       cond{status: corev1.ConditionFalse},
			updating:      cond{corev1.ConditionTrue, "", updatingMsg},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionFalse},
			configuration: oldCfg,
		},
		{
			// The docs again: a cordoned node counts in UPDATEDMACHINECOUNT but not
			// in READYMACHINECOUNT, it is unavailable, and the pool reads UPDATING.
			name:          "a cordoned node at the target",
			pool:          pool(),
			nodes:         nodes(node("a", at(newCfg)), node("b", at(newCfg)), node("c", at(newCfg), cordoned())),
			counts:        counts{3, 3, 2, 1, 0},
			updated:       cond{status: corev1.ConditionFalse},
			updating:      cond{corev1.ConditionTrue, "", updatingMsg},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionFalse},
			configuration: oldCfg,
		},
		{
			name:          "paused",
			pool:          pool(paused()),
			nodes:         nodes(node("a", at(newCfg)), node("b", at(oldCfg))),
			counts:        counts{2, 1, 1, 0, 0},
			updated:       cond{status: corev1.ConditionFalse},
			updating:      cond{corev1.ConditionFalse, "", "Pool is paused; will not update to MachineConfig rendered-worker-new"},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionFalse},
			configuration: oldCfg,
		},
		{
			name: "degraded nodes",
			pool: pool(),
			nodes: nodes(
				node("b", degraded(oldCfg, newCfg, `failed to drain node: pod "db-0" is blocked`)),
				node("a", annotate(newCfg, newCfg, nodeanno.StateDegraded, "content mismatch for file \"/etc/foo\"")),
				node("c", annotate(oldCfg, newCfg, nodeanno.StateUnreconcilable, "")),
				node("d", at(newCfg)),
			),
			// a (drift) is unavailable: current equals desired, so it is not failing.
			counts:   counts{4, 1, 1, 1, 3},
			updated:  cond{status: corev1.ConditionFalse},
			updating: cond{corev1.ConditionTrue, "", updatingMsg},
			nodeDegr: cond{corev1.ConditionTrue, "3 nodes are reporting degraded status on sync",
				`Node a is reporting: "content mismatch for file \"/etc/foo\"", Node b is reporting: "failed to drain node: pod \"db-0\" is blocked"`},
			degraded: cond{corev1.ConditionTrue, "",
				`Node a is reporting: "content mismatch for file \"/etc/foo\"", Node b is reporting: "failed to drain node: pod \"db-0\" is blocked"`},
			configuration: oldCfg,
		},
		{
			name: "render degraded",
			pool: func() *poolT {
				p := pool()
				rollout.SetRenderDegraded(&p.Status, p.Name, errors.New("no MachineConfigs found"), t0)
				return p
			}(),
			nodes:         nodes(node("a", at(newCfg))),
			counts:        counts{1, 1, 1, 0, 0},
			updated:       cond{corev1.ConditionTrue, "", updatedMsg},
			updating:      cond{status: corev1.ConditionFalse},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionTrue},
			configuration: newCfg,
		},
		{
			name:          "no nodes",
			pool:          pool(),
			counts:        counts{0, 0, 0, 0, 0},
			updated:       cond{corev1.ConditionTrue, "", updatedMsg},
			updating:      cond{status: corev1.ConditionFalse},
			nodeDegr:      cond{status: corev1.ConditionFalse},
			degraded:      cond{status: corev1.ConditionFalse},
			configuration: newCfg,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rollout.Status(tt.pool, tt.nodes, t1)
			if got := countsOf(s); got != tt.counts {
				t.Errorf("counts = %+v, want %+v", got, tt.counts)
			}
			for _, c := range []struct {
				t    mcfgv1.MachineConfigPoolConditionType
				want cond
			}{
				{mcfgv1.MachineConfigPoolUpdated, tt.updated},
				{mcfgv1.MachineConfigPoolUpdating, tt.updating},
				{mcfgv1.MachineConfigPoolNodeDegraded, tt.nodeDegr},
				{mcfgv1.MachineConfigPoolDegraded, tt.degraded},
			} {
				if got := condOf(t, &s, c.t); got != c.want {
					t.Errorf("%s = %+v, want %+v", c.t, got, c.want)
				}
			}
			if s.Configuration.Name != tt.configuration {
				t.Errorf("configuration = %s, want %s", s.Configuration.Name, tt.configuration)
			}
			if s.ObservedGeneration != tt.pool.Generation {
				t.Errorf("observedGeneration = %d, want %d", s.ObservedGeneration, tt.pool.Generation)
			}
		})
	}
}

// TestStatusTransitionTimes checks that a condition keeps its lastTransitionTime while
// its status holds, even when its message changes, and that nothing else in the pool's
// status is lost or shared.
func TestStatusTransitionTimes(t *testing.T) {
	p := pool()
	p.Status.CertExpirys = []mcfgv1.CertExpiry{{Bundle: "KubeAPIServerServingCAData", Subject: "CN=x"}}
	p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: "Custom", Status: corev1.ConditionTrue, LastTransitionTime: t0}}
	ns := nodes(node("a", updating(oldCfg, newCfg)))

	first := rollout.Status(p, ns, t0)
	p.Status = first
	// The target moves on while the pool is still updating: Updating stays True with
	// a new message and keeps its time.
	p.Spec.Configuration.Name = "rendered-worker-newer"
	second := rollout.Status(p, ns, t1)
	u := rollout.FindCondition(&second, mcfgv1.MachineConfigPoolUpdating)
	if u.Message != "All nodes are updating to MachineConfig rendered-worker-newer" || !u.LastTransitionTime.Equal(&t0) {
		t.Errorf("Updating = %+v, want the new message at the first time", u)
	}
	// The pool completes: Updated flips and takes the new time.
	p.Status = second
	ns = nodes(node("a", at("rendered-worker-newer")))
	third := rollout.Status(p, ns, t1)
	if c := rollout.FindCondition(&third, mcfgv1.MachineConfigPoolUpdated); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("Updated = %+v, want True at t1", c)
	}
	if c := rollout.FindCondition(&third, mcfgv1.MachineConfigPoolNodeDegraded); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("NodeDegraded = %+v, want its first time", c)
	}
	if c := rollout.FindCondition(&third, "Custom"); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("the Custom condition was lost: %+v", third.Conditions)
	}
	if len(third.CertExpirys) != 1 {
		t.Errorf("certExpirys lost: %+v", third.CertExpirys)
	}
	// The input pool's status is not modified.
	third.CertExpirys[0].Subject = "changed"
	if p.Status.CertExpirys[0].Subject != "CN=x" {
		t.Error("Status shares memory with the pool")
	}
	// Computing again with nothing changed changes nothing.
	p.Status = third
	again := rollout.Status(p, ns, metav1.NewTime(epoch.Add(2*time.Hour)))
	for i := range again.Conditions {
		if !again.Conditions[i].LastTransitionTime.Equal(&third.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s moved to %v with nothing changed", again.Conditions[i].Type, again.Conditions[i].LastTransitionTime)
		}
	}
}

func TestSetRenderDegraded(t *testing.T) {
	var s mcfgv1.MachineConfigPoolStatus
	rollout.SetRenderDegraded(&s, "infra", errors.New("no MachineConfigs found matching selector machineconfiguration.openshift.io/role=infra"), t0)
	if got, want := condOf(t, &s, mcfgv1.MachineConfigPoolRenderDegraded), (cond{corev1.ConditionTrue, "",
		"Failed to render configuration for pool infra: no MachineConfigs found matching selector machineconfiguration.openshift.io/role=infra"}); got != want {
		t.Errorf("RenderDegraded = %+v, want %+v", got, want)
	}
	rollout.SetRenderDegraded(&s, "infra", nil, t1)
	if got := condOf(t, &s, mcfgv1.MachineConfigPoolRenderDegraded); got != (cond{status: corev1.ConditionFalse}) {
		t.Errorf("RenderDegraded after a render = %+v", got)
	}
	if len(s.Conditions) != 1 {
		t.Errorf("conditions = %+v, want one", s.Conditions)
	}
}
