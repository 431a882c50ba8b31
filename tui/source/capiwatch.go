package source

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui/model"
)

// capiWatched is the informer on one Cluster API resource, whose objects are CAPI
// events.
func capiWatched(df dynamicinformer.DynamicSharedInformerFactory, gvr schema.GroupVersionResource) watched {
	return watched{what: gvr.Resource, informer: df.ForResource(gvr).Informer(), event: func(o any) (model.Event, bool) {
		u, ok := o.(*unstructured.Unstructured)
		return model.CAPIEvent(u), ok
	}}
}

// unwatchedCAPI are the Cluster API resources New did not watch (not served, or not
// readable by this identity), in capiResources' order.
func unwatchedCAPI(served map[schema.GroupVersionResource]bool) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, gvr := range capiResources {
		if !served[gvr] {
			out = append(out, gvr)
		}
	}
	return out
}

// rediscoverCAPI looks, every interval until ctx ends, for the Cluster API resources
// the source did not watch when it connected (pending), and watches those served and
// readable now: Cluster API's CRDs are often installed while a TUI is open (or an
// `mcotui serve` runs for days), and its MachineDeployments then appear in the boot
// images pane without a restart. One discovery request an interval while Cluster API is
// absent (the others wait for the MachineDeployments), none once all are watched; it
// needs no rights on CustomResourceDefinitions. The resources found in one look start
// together, so that a MachineDeployment and the template it names arrive together.
func (c *Cluster) rediscoverCAPI(ctx context.Context, pending []schema.GroupVersionResource, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var df dynamicinformer.DynamicSharedInformerFactory
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var still, found []schema.GroupVersionResource
		for i, gvr := range pending {
			ok, err := capiReadable(ctx, c.clients, gvr)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				c.log.Debug("cannot look for Cluster API's resources again", "resource", gvr.Resource, "err", err)
				still = append(still, pending[i:]...)
				break
			}
			if ok {
				found = append(found, gvr)
				continue
			}
			if gvr == bootimage.MachineDeploymentsResource {
				still = append(still, pending[i:]...)
				break
			}
			still = append(still, gvr)
		}
		pending = still
		if len(found) == 0 {
			continue
		}
		newFactory := df == nil
		if newFactory {
			df = dynamicinformer.NewDynamicSharedInformerFactory(c.clients.Dynamic, 0)
		}
		var ws []watched
		for _, gvr := range found {
			w := capiWatched(df, gvr)
			if err := c.handle(w); err != nil {
				c.log.Warn("cannot watch Cluster API's resources", "resource", gvr.Resource, "err", err)
				continue
			}
			ws = append(ws, w)
		}
		c.mu.Lock()
		if ctx.Err() != nil { // Close has taken the factories to shut down
			c.mu.Unlock()
			if newFactory {
				df.Shutdown()
			}
			return
		}
		c.watched = append(c.watched, ws...)
		if newFactory {
			c.factories = append(c.factories, df)
		}
		df.Start(ctx.Done())
		c.mu.Unlock()
		for _, w := range ws {
			c.log.Info("Cluster API's resource is served and readable now: watching it", "resource", w.what)
		}
	}
}

// capiReadable says whether the cluster serves gvr and this identity may list and
// watch it everywhere.
func capiReadable(ctx context.Context, clients *kube.Clients, gvr schema.GroupVersionResource) (bool, error) {
	served, err := kube.Served(clients.Kube.Discovery(), gvr.GroupVersion(), gvr.Resource)
	if err != nil || !served {
		return false, err
	}
	ok, _, err := kube.MayListWatch(ctx, clients.Kube, gvr)
	return ok, err
}
