package controller

import (
	"errors"
	"maps"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfgv1informers "github.com/openshift/client-go/machineconfiguration/informers/externalversions/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/core/rollout"
)

// rolloutInformers are what a pool's rollout reads, and the one watch of them that the
// controller's rollout loop and a terminal's drive (DriveSession) share: the same named
// filters (nodeChangeMatters, mcnChangeMatters, poolChangeMattersToRollout) decide
// which changes wake them, so that the two cannot drift apart.
type rolloutInformers struct {
	nodes coreinformers.NodeInformer
	pools mcfgv1informers.MachineConfigPoolInformer
	mcns  mcfgv1informers.MachineConfigNodeInformer
}

func newRolloutInformers(kubeF kubeinformers.SharedInformerFactory, mcfgF mcfginformers.SharedInformerFactory) rolloutInformers {
	return rolloutInformers{
		nodes: kubeF.Core().V1().Nodes(),
		pools: mcfgF.Machineconfiguration().V1().MachineConfigPools(),
		mcns:  mcfgF.Machineconfiguration().V1().MachineConfigNodes(),
	}
}

func (w rolloutInformers) synced() []cache.InformerSynced {
	return []cache.InformerSynced{w.nodes.Informer().HasSynced, w.pools.Informer().HasSynced, w.mcns.Informer().HasSynced}
}

// watch registers the rollout's event handlers: each change that matters hands enqueue
// the pools it may concern, at once (a queue coalesces a burst into one sync per pool).
// Updates that change nothing the rollout reads (a kubelet's heartbeat, an agent's
// MachineConfigNode conditions, the rollout's own pool status) enqueue nothing;
// resyncs (same resourceVersion) do, as they are how a dropped key comes back.
func (w rolloutInformers) watch(enqueue func(pool string)) error {
	var regs []error
	_, err := w.nodes.Informer().AddEventHandler(handler(func(old, cur *corev1.Node) []string {
		if old != nil && cur != nil && !nodeChangeMatters(old, cur) {
			return nil
		}
		return w.poolsOfNode(old, cur)
	}, enqueue))
	regs = append(regs, err)
	_, err = w.mcns.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.MachineConfigNode) []string {
		if cur == nil {
			return nil
		}
		if old != nil && !mcnChangeMatters(old, cur) {
			return nil
		}
		return []string{cur.Spec.Pool.Name}
	}, enqueue))
	regs = append(regs, err)
	_, err = w.pools.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.MachineConfigPool) []string {
		if old == nil || !equalSelectors(old, cur) {
			return w.allPools() // membership of every pool may change
		}
		others := w.sequencedOn(old, cur) // pools ordered after this one (sequence.go)
		if !poolChangeMattersToRollout(old, cur) {
			return others
		}
		return append(others, cur.Name)
	}, enqueue))
	regs = append(regs, err)
	return errors.Join(regs...)
}

// allPools are the names of every pool in the cache.
func (w rolloutInformers) allPools() []string {
	ps, _ := w.pools.Lister().List(labels.Everything())
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// poolsOfNode are the pools whose nodeSelector matches either version of a node: its
// membership may have changed.
func (w rolloutInformers) poolsOfNode(old, cur *corev1.Node) []string {
	ps, _ := w.pools.Lister().List(labels.Everything())
	var out []string
	for _, p := range ps {
		if (old != nil && rollout.Selects(p, old)) || (cur != nil && rollout.Selects(p, cur)) {
			out = append(out, p.Name)
		}
	}
	return out
}

// poolChangeMattersToRollout reports whether an update of a pool (same selector) may
// change its rollout: anything but a status write, the rollout's own as a rule. Its
// rollback pin and its policy are metadata, which do not move the generation; the
// render loop's RenderDegraded is status that the rollout's Degraded follows.
func poolChangeMattersToRollout(old, cur *mcfgv1.MachineConfigPool) bool {
	statusWrite := old.ResourceVersion != cur.ResourceVersion && old.Generation == cur.Generation && samePin(old, cur) &&
		samePolicy(old, cur) && equality.Semantic.DeepEqual(old.Spec, cur.Spec) && sameRenderDegraded(old, cur)
	return !statusWrite
}

// poolChangeMattersToRender reports whether an update of a pool may change what it
// renders to: anything but a status write (its rollback pin included).
func poolChangeMattersToRender(old, cur *mcfgv1.MachineConfigPool) bool {
	statusWrite := old.Generation == cur.Generation && old.ResourceVersion != cur.ResourceVersion && samePin(old, cur)
	return !statusWrite
}

// nodeChangeMatters reports whether a node's update may change its pool's rollout:
// anything but its status other than the conditions' statuses (heartbeats, images,
// addresses), or a resync of the same version.
func nodeChangeMatters(old, cur *corev1.Node) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true // a resync
	}
	if !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec) || len(old.Status.Conditions) != len(cur.Status.Conditions) {
		return true
	}
	for i := range old.Status.Conditions {
		if old.Status.Conditions[i].Type != cur.Status.Conditions[i].Type || old.Status.Conditions[i].Status != cur.Status.Conditions[i].Status {
			return true
		}
	}
	return false
}

// mcnChangeMatters says whether an update of a MachineConfigNode changes what the
// rollout reads of it: its spec (its pool), and the pinned image sets' status, from which the pool's PinnedImageSets synchronizer is counted. The rest of
// an agent's status writes (its conditions, a phase at a time) change neither.
func mcnChangeMatters(old, cur *mcfgv1.MachineConfigNode) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true // a resync
	}
	return old.Spec != cur.Spec || !equality.Semantic.DeepEqual(old.Status.PinnedImageSets, cur.Status.PinnedImageSets)
}

// sameRenderDegraded: the render loop's condition is the same in both. The rollout
// writes Degraded from it, so the render loop's status write must reach the rollout
// loop, or a pool that renders again stays Degraded.
func sameRenderDegraded(a, b *mcfgv1.MachineConfigPool) bool {
	status := func(p *mcfgv1.MachineConfigPool) corev1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == mcfgv1.MachineConfigPoolRenderDegraded {
				return c.Status
			}
		}
		return ""
	}
	return status(a) == status(b)
}

// samePin: the pools' rollback annotations are the same. They are metadata, which
// does not move a pool's generation, yet decide what it renders to.
func samePin(a, b *mcfgv1.MachineConfigPool) bool {
	return a.Annotations[rollout.RollbackToAnnotation] == b.Annotations[rollout.RollbackToAnnotation] &&
		a.Annotations[rollout.RollbackFromAnnotation] == b.Annotations[rollout.RollbackFromAnnotation]
}

func equalSelectors(a, b *mcfgv1.MachineConfigPool) bool {
	return a.Spec.NodeSelector.String() == b.Spec.NodeSelector.String()
}
