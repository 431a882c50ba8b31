package controller_test

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// watchLag is how late the lagging controller's informers see every change.
const watchLag = time.Second

// TestRolloutRespectsMaxUnavailableOnALaggingCache rolls a pool out as
// TestRolloutRespectsMaxUnavailable does, with a controller whose informers see every
// change a second late (its watch responses are held back a second, byte by byte, by
// kubetest.LagWatches wrapping its transport): its own targets, its taints, the agent's reports. The
// controller plans from those caches, so only its record of its own writes keeps it
// from targeting more nodes than maxUnavailable; the recorder, which watches without
// lag, sees no more than 2 unavailable at any change, and the rollout completes.
func TestRolloutRespectsMaxUnavailableOnALaggingCache(t *testing.T) {
	pool := createPool(t, "lag", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-lag", "lag", "/etc/lag", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "lag", old, "zone-a", "zone-a", "zone-b", "zone-b", "")
	startFakeAgent(t, "lag", 300*time.Millisecond)
	rec := recordNodes(t, "lag")

	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return kubetest.LagWatches(rt, watchLag) })
	lagging, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, "lease-lag", "lag-a", func(c *controller.Config) { c.Clients = lagging })
	waitRolledOut(t, "lag", old, nodes, 60*time.Second)

	v2 := machineConfig(t, "00-lag", "lag", "/etc/lag", "v2")
	target := expectedRendered(t, pool, v2)
	rec.expect(target)
	applyMC(t, v2)
	waitRolledOut(t, "lag", target, nodes, 2*time.Minute)

	maxSeen, at, order, events := rec.report()
	t.Logf("cache %s late: %d node changes; at most %d unavailable (%s); targeted in order %v", watchLag, events, maxSeen, at, order)
	if maxSeen > 2 {
		t.Errorf("%d nodes were unavailable at once (%s); maxUnavailable is 2", maxSeen, at)
	}
}
