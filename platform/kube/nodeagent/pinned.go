package nodeagent

import (
	"context"
	"fmt"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/platform/kube"
)

// Pins is the node's access to the PinnedImageSets of its pool: it watches the
// MachineConfigPools and PinnedImageSets (cluster-scoped, few) and writes the
// MachineConfigNode's status.pinnedImageSets and its two PinnedImageSets conditions. It
// satisfies the agent's PinCluster interface. It lives as long as the NodeAgent it was
// made from, or until Close.
type Pins struct {
	a       *NodeAgent
	pools   mcfglisters.MachineConfigPoolLister
	sets    mcfglisters.PinnedImageSetLister
	inf     mcfginformers.SharedInformerFactory
	changes chan struct{}
	stop    context.CancelFunc
}

// NewPins starts the informers on MachineConfigPools and PinnedImageSets and waits for
// them to sync.
func NewPins(ctx context.Context, a *NodeAgent) (*Pins, error) {
	served, err := servesPinnedImageSets(a.clients)
	if err != nil {
		return nil, fmt.Errorf("node agent for node %s: %w", a.name, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	p := &Pins{a: a, changes: make(chan struct{}, 1), stop: stop}
	p.inf = mcfginformers.NewSharedInformerFactory(a.clients.MachineConfig, 0)
	pools := p.inf.Machineconfiguration().V1().MachineConfigPools()
	p.pools = pools.Lister()
	informers := map[string]cache.SharedIndexInformer{"machineconfigpools": pools.Informer()}
	// A cluster installed before PinnedImageSets were supported has no CRD for them: an
	// informer on it would never sync. The agent then runs without pinned images, and
	// says so when a pool names a set.
	if served {
		sets := p.inf.Machineconfiguration().V1().PinnedImageSets()
		p.sets = sets.Lister()
		informers["pinnedimagesets"] = sets.Informer()
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.notify() },
		UpdateFunc: func(any, any) { p.notify() },
		DeleteFunc: func(any) { p.notify() },
	}
	var synced []cache.InformerSynced
	for name, i := range informers {
		if _, err := i.AddEventHandler(h); err != nil {
			stop()
			return nil, fmt.Errorf("node agent for node %s: watch %s: %w", a.name, name, err)
		}
		synced = append(synced, i.HasSynced)
	}
	p.inf.Start(runCtx.Done())
	if !cache.WaitForCacheSync(runCtx.Done(), synced...) {
		p.Close()
		return nil, fmt.Errorf("node agent for node %s: wait for the MachineConfigPool and PinnedImageSet informers to sync: %w", a.name, context.Cause(runCtx))
	}
	return p, nil
}

// servesPinnedImageSets says whether the cluster serves the PinnedImageSet resource.
func servesPinnedImageSets(c *kube.Clients) (bool, error) {
	gv := mcfgv1.GroupVersion.String()
	list, err := c.MachineConfig.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("discover the %s API: %w", gv, err)
	}
	return list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "pinnedimagesets" }), nil
}

func (p *Pins) notify() {
	select {
	case p.changes <- struct{}{}:
	default:
	}
}

// Close stops the informers.
func (p *Pins) Close() {
	p.stop()
	p.inf.Shutdown()
}

// Changes receives a value after a change to any pool or PinnedImageSet (coalesced).
func (p *Pins) Changes() <-chan struct{} { return p.changes }

// Node returns the node (see NodeAgent.Node).
func (p *Pins) Node(ctx context.Context) (*corev1.Node, error) { return p.a.Node(ctx) }

// Event records an event on the node.
func (p *Pins) Event(eventType, reason, message string) { p.a.Event(eventType, reason, message) }

// Sets returns the node's pool and the PinnedImageSets it names, in the pool's order. A
// set the pool names that does not exist is an error naming it, as in MCO.
func (p *Pins) Sets(ctx context.Context) (string, []*mcfgv1.PinnedImageSet, error) {
	pool := p.a.pool
	if pool == "" {
		node, err := p.a.Node(ctx)
		if err != nil {
			return "", nil, err
		}
		if pool, err = poolOf(node); err != nil {
			return "", nil, err
		}
	}
	mcp, err := p.pools.Get(pool)
	if apierrors.IsNotFound(err) {
		return pool, nil, nil // no pool yet: nothing to pin
	}
	if err != nil {
		return pool, nil, fmt.Errorf("get machineconfigpool %s: %w", pool, err)
	}
	out := make([]*mcfgv1.PinnedImageSet, 0, len(mcp.Spec.PinnedImageSets))
	if p.sets == nil && len(mcp.Spec.PinnedImageSets) > 0 {
		return pool, nil, fmt.Errorf("machineconfigpool %s names PinnedImageSets, but the cluster does not serve pinnedimagesets.%s: apply the CRD (`mcotui install` has it) and restart the agent", pool, mcfgv1.GroupVersion)
	}
	for _, ref := range mcp.Spec.PinnedImageSets {
		s, err := p.sets.Get(ref.Name)
		if err != nil {
			return pool, nil, fmt.Errorf("pinnedimageset %s named by machineconfigpool %s: %w", ref.Name, pool, err)
		}
		out = append(out, s.DeepCopy())
	}
	return pool, out, nil
}

// Status returns the MachineConfigNode's status.pinnedImageSets as last written (nil
// when the MachineConfigNode does not exist yet).
func (p *Pins) Status(ctx context.Context) ([]mcfgv1.MachineConfigNodeStatusPinnedImageSet, error) {
	mcn, err := p.a.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, p.a.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get machineconfignode %s: %w", p.a.name, err)
	}
	return mcn.Status.PinnedImageSets, nil
}

// SetStatus writes the MachineConfigNode's status.pinnedImageSets (replaced by sets) and
// the PinnedImageSets conditions in conds. Unlike MCO's writer, it leaves every other
// condition alone: MCO's turns Updated False ("sensed disruption via a manual update")
// whenever a pinned-image condition is written on an updated node, which would make a
// node that only pulled images look as if it left its config. A condition keeps its
// transition time while its status is unchanged. Nothing is written when nothing
// changes. A missing MachineConfigNode is created once the node has a desired config
// (the agent's own first report otherwise creates it).
func (p *Pins) SetStatus(ctx context.Context, sets []mcfgv1.MachineConfigNodeStatusPinnedImageSet, conds ...pinned.Condition) error {
	mcns := p.a.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mcn, err := mcns.Get(ctx, p.a.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, nerr := p.a.getNode(ctx)
			if nerr != nil {
				return nerr
			}
			desired := nodeanno.Desired(node)
			if desired == "" {
				return fmt.Errorf("no MachineConfigNode yet, and node %s has no desired config to create one with", p.a.name)
			}
			pool := p.a.pool
			if pool == "" {
				if pool, err = poolOf(node); err != nil {
					return err
				}
			}
			if mcn, err = mcns.Create(ctx, kube.NewMachineConfigNode(node, pool, desired), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create: %w", err)
			}
		} else if err != nil {
			return err
		}
		updated := mcn.DeepCopy()
		if len(sets) == 0 {
			sets = nil
		}
		updated.Status.PinnedImageSets = sets
		now := metav1.NewTime(p.a.clock.Now())
		for _, c := range conds {
			nc := metav1.Condition{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: clampMessage(c.Message), LastTransitionTime: now}
			i := index(updated.Status.Conditions, nc.Type)
			switch {
			case i < 0:
				updated.Status.Conditions = append(updated.Status.Conditions, nc)
			default:
				if updated.Status.Conditions[i].Status == nc.Status {
					nc.LastTransitionTime = updated.Status.Conditions[i].LastTransitionTime
				}
				updated.Status.Conditions[i] = nc
			}
		}
		if equality.Semantic.DeepEqual(updated.Status, mcn.Status) {
			return nil
		}
		_, err = mcns.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set pinned image status of MachineConfigNode %s: %w", p.a.name, err)
	}
	return nil
}

func index(conds []metav1.Condition, t string) int {
	for i, c := range conds {
		if c.Type == t {
			return i
		}
	}
	return -1
}

func clampMessage(m string) string {
	return clampMessages([]phase.Condition{{Message: m}})[0].Message
}
