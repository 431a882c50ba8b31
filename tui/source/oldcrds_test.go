package source

import (
	"testing"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestSourceOnCRDsOf2025: the TUI's source syncs against an API server serving the
// Default CRDs of openshift/api of 2025-10 (testdata/crds-2025-10) and shows the
// cluster connected, its pools and nodes, as on the 2026 CRDs.
func TestSourceOnCRDsOf2025(t *testing.T) {
	crds, err := kubetest.CRDsIn("../../testdata/crds-2025-10")
	if err != nil {
		t.Fatal(err)
	}
	ctx := kubetest.Context(t)
	old, err := kubetest.StartWithCRDs(ctx, crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := old.Stop(); err != nil {
			t.Errorf("stop the 2025-10 control plane: %v", err)
		}
	})
	clustertest.SeedPool(ctx, t, old, "told", 2, 1)
	c := newCluster(t, old.Config, Options{Context: "old"})
	s := c.Subscribe()
	defer s.Close()
	kinds := map[model.Kind]int{}
	var health model.Health
	for _, e := range s.Snapshot() {
		kinds[e.Kind]++
		if e.Kind == model.KindHealth {
			health = e.Health
		}
	}
	if kinds[model.KindPool] == 0 || kinds[model.KindNode] < 3 {
		t.Errorf("snapshot by kind: %v", kinds)
	}
	if health.State != model.Connected {
		t.Errorf("health after sync on the 2025-10 CRDs: %+v", health)
	}
}
