package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
)

// Reasons of the boot image conditions for the Cluster API triggers (MCO, which only
// counts MachineDeployments, names none).
const (
	reasonMachineDeploymentUpdated = "CAPIMachineDeploymentUpdated"
	reasonMachineTemplateUpdated   = "CAPIMachineTemplateUpdated"
)

// capiWatch is one Cluster API resource the boot image loop watches, and the filter
// of its updates.
type capiWatch struct {
	gvr     schema.GroupVersionResource
	reason  string
	matters func(old, cur *unstructured.Unstructured) bool
}

// capiWatches: the MachineDeployments, and the templates their decision reads (a
// MachineDeployment created before the template it names fails its sync until the
// template exists, and nothing about the MachineDeployment changes when it does).
// The Cluster and AWSCluster a decision reads for the region are not watched: their
// region is immutable, and the controller may only get them.
var capiWatches = []capiWatch{
	{bootimage.MachineDeploymentsResource, reasonMachineDeploymentUpdated, machineDeploymentChangeMatters},
	{bootimage.AWSMachineTemplatesResource, reasonMachineTemplateUpdated, machineTemplateChangeMatters},
	{bootimage.GCPMachineTemplatesResource, reasonMachineTemplateUpdated, machineTemplateChangeMatters},
}

// machineDeploymentChangeMatters is the event filter of MachineDeployment updates: a
// change of what bootimage.SelectMachineDeployments and DecideMachineDeployment read
// (the spec, which carries the template reference; the labels Partial matches; the
// owner references; the architecture annotation). Cluster API writes a
// MachineDeployment's status on every replica change, and none of it matters.
func machineDeploymentChangeMatters(old, cur *unstructured.Unstructured) bool {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return true // a resync
	}
	return old.GetGeneration() != cur.GetGeneration() ||
		!equalStrings(old.GetLabels(), cur.GetLabels()) ||
		old.GetAnnotations()[bootimage.ArchAnnotation] != cur.GetAnnotations()[bootimage.ArchAnnotation] ||
		!equalOwners(old.GetOwnerReferences(), cur.GetOwnerReferences())
}

// machineTemplateChangeMatters is the event filter of machine template updates: a
// change of the spec (the image), or of the annotation that marks a copy mcotui made
// (which it may delete once unused). Additions and deletions always pass.
func machineTemplateChangeMatters(old, cur *unstructured.Unstructured) bool {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return true // a resync
	}
	_, oldOurs := old.GetAnnotations()[bootimage.TemplateOfAnnotation]
	_, curOurs := cur.GetAnnotations()[bootimage.TemplateOfAnnotation]
	return old.GetGeneration() != cur.GetGeneration() || oldOurs != curOurs
}

func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ac, bc := a[i].Controller != nil && *a[i].Controller, b[i].Controller != nil && *b[i].Controller
		if a[i].UID != b[i].UID || a[i].Kind != b[i].Kind || a[i].Name != b[i].Name || ac != bc {
			return false
		}
	}
	return true
}

// watchCAPI makes the boot image loop's informers on Cluster API's resources, each
// where the cluster serves it (discovery) and the controller may list and watch it
// (installed with --boot-images): every change that matters syncs the loop at once,
// instead of at the next resync. Where neither holds, it says so once per term, at
// info level (a single line for the MachineDeployments when they are not watched: the
// templates are not watched then either), the loop still syncs MachineDeployments on
// its other triggers, and rediscoverCAPI looks for them again every Rediscover: Cluster
// API's CRDs are often installed after the controller started.
func (t *term) watchCAPI(ctx context.Context, c *kube.Clients, key func(string) []string, add func(string)) error {
	var (
		f       dynamicinformer.DynamicSharedInformerFactory
		pending []capiWatch
	)
	for i, w := range capiWatches {
		ok, why, err := capiWatchable(ctx, c, w.gvr)
		if err != nil {
			return err
		}
		if !ok {
			t.log.Info("Cluster API "+w.gvr.Resource+" are not watched: "+why+"; the boot image loop syncs them on its other triggers and looks for them again every "+t.cfg.Rediscover.String(), "loop", "bootimages")
			if w.gvr == bootimage.MachineDeploymentsResource {
				pending = capiWatches[i:] // one line on a cluster without Cluster API, and no template watch without them
				break
			}
			pending = append(pending, w)
			continue
		}
		if f == nil {
			f = dynamicinformer.NewDynamicSharedInformerFactory(c.Dynamic, t.cfg.Resync)
			t.factories = append(t.factories, f)
		}
		inf, err := capiInformer(f, w, key, add)
		t.register(nil, err)
		t.synced = append(t.synced, inf.HasSynced)
	}
	if len(pending) > 0 {
		t.tasks = append(t.tasks, func(ctx context.Context) { t.rediscoverCAPI(ctx, c, pending, key, add) })
	}
	return nil
}

// capiInformer makes f's informer on w's resource, whose changes that matter sync the
// boot image loop (add) with w's reason.
func capiInformer(f dynamicinformer.DynamicSharedInformerFactory, w capiWatch, key func(string) []string, add func(string)) (cache.SharedIndexInformer, error) {
	inf := f.ForResource(w.gvr).Informer()
	_, err := inf.AddEventHandler(handler(func(old, cur *unstructured.Unstructured) []string {
		if old != nil && !w.matters(old, cur) {
			return nil
		}
		return key(w.reason)
	}, add))
	return inf, err
}

// rediscoverCAPI looks, every Rediscover until the term ends, for the Cluster API
// resources watchCAPI could not watch (pending, in capiWatches' order), and watches each
// once it is served and readable: a MachineDeployment created after its CRD is then
// synced at once, without a restart. The templates wait for the MachineDeployments. The
// informers' initial lists sync the loop, so the MachineDeployments already there are
// synced when the watch starts. Discovery and SelfSubjectAccessReviews are open to every
// authenticated identity: this needs no rights on CustomResourceDefinitions.
func (t *term) rediscoverCAPI(ctx context.Context, c *kube.Clients, pending []capiWatch, key func(string) []string, add func(string)) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(c.Dynamic, t.cfg.Resync)
	defer f.Shutdown() // after every informer of f has stopped with ctx
	tick := time.NewTicker(t.cfg.Rediscover)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var still []capiWatch
		for i, w := range pending {
			ok, _, err := capiWatchable(ctx, c, w.gvr)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				t.log.Warn("looking for Cluster API "+w.gvr.Resource+" again failed; next try in "+t.cfg.Rediscover.String(), "loop", "bootimages", "err", err)
				still = append(still, pending[i:]...)
				break
			}
			if !ok {
				if w.gvr == bootimage.MachineDeploymentsResource {
					still = append(still, pending[i:]...)
					break
				}
				still = append(still, w)
				continue
			}
			if _, err := capiInformer(f, w, key, add); err != nil {
				t.log.Warn("watch Cluster API "+w.gvr.Resource, "loop", "bootimages", "err", err)
				still = append(still, w)
				continue
			}
			f.Start(ctx.Done())
			t.log.Info("Cluster API "+w.gvr.Resource+" are served and readable now: watching them", "loop", "bootimages")
		}
		pending = still
	}
	<-ctx.Done() // f's informers run until the term ends
}

// capiWatchable says whether the cluster serves gvr and the controller may list and
// watch it in every namespace, and why not.
func capiWatchable(ctx context.Context, c *kube.Clients, gvr schema.GroupVersionResource) (bool, string, error) {
	served, err := kube.Served(c.Kube.Discovery(), gvr.GroupVersion(), gvr.Resource)
	if err != nil {
		return false, "", err
	}
	if !served {
		return false, fmt.Sprintf("the cluster does not serve %s/%s", gvr.GroupVersion(), gvr.Resource), nil
	}
	ok, verb, err := kube.MayListWatch(ctx, c.Kube, gvr)
	if err != nil || !ok {
		return false, fmt.Sprintf("the controller may not %s %s (install --boot-images grants it)", verb, gvr.GroupResource()), err
	}
	return true, "", nil
}
