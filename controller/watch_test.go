package controller

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestPoolChangeMattersToRollout: the filter the controller's rollout loop and a
// terminal's drive share wakes them for what the rollout reads of a pool, and for
// nothing else. A drive used to drop RenderDegraded changes, so a pool that rendered
// again stayed Degraded until its next interval.
func TestPoolChangeMattersToRollout(t *testing.T) {
	base := &mcfgv1.MachineConfigPool{}
	base.Name, base.ResourceVersion, base.Generation = "worker", "1", 1
	base.Spec.Configuration.Name = "rendered-worker-1"
	for _, tc := range []struct {
		name    string
		change  func(p *mcfgv1.MachineConfigPool)
		matters bool
	}{
		{"a resync", func(*mcfgv1.MachineConfigPool) {}, true},
		{"a status write", func(p *mcfgv1.MachineConfigPool) {
			p.ResourceVersion = "2"
			p.Status.UpdatedMachineCount = 3
		}, false},
		{"RenderDegraded turns True", func(p *mcfgv1.MachineConfigPool) {
			p.ResourceVersion = "2"
			p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolRenderDegraded, Status: corev1.ConditionTrue}}
		}, true},
		{"a new target", func(p *mcfgv1.MachineConfigPool) {
			p.ResourceVersion, p.Generation = "2", 2
			p.Spec.Configuration.Name = "rendered-worker-2"
		}, true},
		{"a rollback pin", func(p *mcfgv1.MachineConfigPool) {
			p.ResourceVersion = "2"
			p.Annotations = map[string]string{"mcotui.io/rollback-to": "rendered-worker-0"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := poolChangeMattersToRollout(base, cur); got != tc.matters {
				t.Errorf("matters = %v, want %v", got, tc.matters)
			}
		})
	}
}
