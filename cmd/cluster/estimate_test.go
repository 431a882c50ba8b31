package cluster

import (
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/estimate"
)

// TestEstimateLineFailedAndRetrying: status's line counts each node once, a node
// retrying neither as updating nor as failed, and gives no time when only failed and
// retrying nodes are left.
func TestEstimateLineFailedAndRetrying(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	r := estimate.Record{}.Add(estimate.Sample{Drain: time.Minute, Apply: time.Minute, Reboot: 2 * time.Minute, Ready: time.Minute})
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Annotations: map[string]string{estimate.PhaseTimesKey: r.Format()}}}
	for _, tc := range []struct {
		name  string
		nodes []estimate.Node
		want  string
	}{
		{"a failed node, another retrying its drain, one waiting", []estimate.Node{
			{Name: "a", Phase: estimate.Failed},
			{Name: "b", Phase: estimate.Draining, Since: now.Add(-time.Hour), Retrying: true},
			{Name: "c", Phase: estimate.Waiting},
		}, "worker: ~9m (from 1 node updated); 0 updating, 1 waiting, 1 retrying (not counted), 1 failed (not counted)"},
		{"only a node retrying its drain", []estimate.Node{
			{Name: "b", Phase: estimate.Draining, Since: now.Add(-time.Hour), Retrying: true},
		}, "worker: unknown: 1 retrying (from 1 node updated); 0 updating, 0 waiting, 1 retrying (not counted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := estimateLine(p, tc.nodes, now)
			if !ok || got != tc.want {
				t.Errorf("estimateLine = %q, %t\nwant %q", got, ok, tc.want)
			}
		})
	}
}
