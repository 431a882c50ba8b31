package controllertest

import (
	"context"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/render"
)

// RenderByHand does what the controller's render loop would, for tests that run no
// controller (those of a DriveSession: the TUI's and `mcotui rollout --wait`'s): it
// renders the pool named pool over mcs (core/render), creates that rendered
// MachineConfig (one of the same name already there is the same content, and is
// fine), deletes it when the test ends, and points the pool's spec.configuration at
// it. It returns the rendered config's name.
func RenderByHand(t testing.TB, client mcfgclient.Interface, pool string, mcs ...*mcfgv1.MachineConfig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pools := client.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("render pool %s by hand: %v", pool, err)
	}
	r, err := render.Render(p, mcs)
	if err != nil {
		t.Fatalf("render pool %s by hand: %v", pool, err)
	}
	rendered := client.MachineconfigurationV1().MachineConfigs()
	if _, err := rendered.Create(ctx, r.Config, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("render pool %s by hand: create %s: %v", pool, r.Config.Name, err)
	}
	t.Cleanup(func() { _ = rendered.Delete(context.Background(), r.Config.Name, metav1.DeleteOptions{}) })
	p.Spec.Configuration.Name = r.Config.Name
	if _, err := pools.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("render pool %s by hand: point it at %s: %v", pool, r.Config.Name, err)
	}
	return r.Config.Name
}
