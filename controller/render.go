package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// Event reasons of the render loop.
const (
	reasonRenderFailed  = "RenderFailed"
	reasonRenderWarning = "RenderWarning"
	reasonSelectingAll  = "SelectingAll" // MCO's
	reasonRendered      = "RenderedConfigCreated"
	// A rollback pin (rollout.RollbackToAnnotation) that ended, or was ignored.
	reasonRollbackEnded   = "RollbackEnded"
	reasonRollbackIgnored = "RollbackIgnored"
)

// renderLoop renders each pool: the rendered MachineConfig, created once, and the
// pool's spec.configuration.
type renderLoop struct {
	clients *kube.Clients
	pools   mcfglisters.MachineConfigPoolLister
	mcs     mcfglisters.MachineConfigLister
	// streams is the OSImageStream cache; nil where the cluster does not serve
	// OSImageStreams (clusters whose CRDs predate OSStreams).
	streams      mcfglisters.OSImageStreamLister
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	version      string
	fieldManager string

	// cache remembers each source's validated Ignition config by content hash; last
	// remembers each pool's last render and the sources it was made from, so that a
	// sync whose selected MachineConfigs have not changed (by resourceVersion) renders
	// nothing. Only the loop's one worker touches last.
	cache *render.Cache
	last  map[string]lastRender
}

// lastRender is a pool's last render: the key of its inputs (see renderKey) and the
// result.
type lastRender struct {
	key string
	r   *render.Rendered
	err error
}

// renderKey identifies what a render of pool from selected depends on: the pool's
// name, machineConfigSelector and stream (named, and the images it resolved to), and each selected MachineConfig's name and
// resourceVersion (any change of a MachineConfig moves its resourceVersion).
func renderKey(pool *mcfgv1.MachineConfigPool, selected []*mcfgv1.MachineConfig, stream *mcfgv1.OSImageStreamSet) string {
	var b strings.Builder
	b.WriteString(pool.Name)
	b.WriteByte(0)
	b.WriteString(metav1.FormatLabelSelector(pool.Spec.MachineConfigSelector))
	b.WriteByte(0)
	b.WriteString(pool.Spec.OSImageStream.Name)
	if stream != nil {
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%s", stream.Name, stream.OSImage, stream.OSExtensionsImage)
	}
	for _, mc := range selected {
		b.WriteByte(0)
		b.WriteString(mc.Name)
		b.WriteByte('@')
		b.WriteString(mc.ResourceVersion)
	}
	return b.String()
}

// render renders pool from its sources among all, or returns the last render when its
// selected sources have not changed since.
func (l *renderLoop) render(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) (*render.Rendered, error) {
	if l.cache == nil {
		l.cache, l.last = render.NewCache(), map[string]lastRender{}
	}
	sources := sourceConfigs(all)
	selected, err := render.Select(pool, sources)
	if err != nil {
		delete(l.last, pool.Name)
		return nil, err
	}
	stream, err := l.stream(pool)
	if err != nil {
		delete(l.last, pool.Name)
		return nil, err
	}
	key := renderKey(pool, selected, stream)
	if last, ok := l.last[pool.Name]; ok && last.key == key {
		return last.r, last.err
	}
	r, err := l.cache.RenderStream(pool, selected, stream)
	l.last[pool.Name] = lastRender{key: key, r: r, err: err}
	return r, err
}

// stream is the OS image stream pool renders against (osstream.EffectiveName, custom
// pools inheriting the worker pool's), or nil: where the cluster serves no
// OSImageStreams, or has no OSImageStream/cluster and the pool names no stream. MCO
// always has the singleton (its operator makes it from the release payload); on a
// cluster without MCO the user declares the streams, and without them a pool renders
// from its MachineConfigs alone, as before OSStreams.
func (l *renderLoop) stream(pool *mcfgv1.MachineConfigPool) (*mcfgv1.OSImageStreamSet, error) {
	if l.streams == nil {
		return nil, nil
	}
	worker, err := l.pools.Get(render.WorkerPool)
	if apierrors.IsNotFound(err) {
		worker = nil
	} else if err != nil {
		return nil, err
	}
	name := osstream.EffectiveName(pool, worker)
	s, err := l.streams.Get(osstream.SingletonName)
	switch {
	case apierrors.IsNotFound(err) && name == "":
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the pool's OS image stream is %q, but there is no OSImageStream %s: create it with the stream in status.availableStreams, or clear spec.osImageStream.name", name, osstream.SingletonName)
	case err != nil:
		return nil, err
	}
	return osstream.Set(s, name)
}

func (l *renderLoop) sync(ctx context.Context, name string) error {
	pool, err := l.pools.Get(name)
	if apierrors.IsNotFound(err) {
		delete(l.last, name)
		return nil
	}
	if err != nil {
		return err
	}
	all, err := l.mcs.List(labels.Everything())
	if err != nil {
		return err
	}
	r, err := l.render(pool, all)
	switch {
	case errors.Is(err, render.ErrSelectsAll):
		// As MCO: a warning, and the pool keeps its last rendered config.
		l.recorder.Event(pool, corev1.EventTypeWarning, reasonSelectingAll, err.Error())
		return nil
	case err != nil:
		l.recorder.Event(pool, corev1.EventTypeWarning, reasonRenderFailed, err.Error())
		// Nothing to retry until a pool or MachineConfig changes, which requeues.
		return l.setRenderDegraded(ctx, pool, err)
	}
	for _, w := range r.Warnings {
		l.recorder.Event(pool, corev1.EventTypeWarning, reasonRenderWarning, w)
	}
	if err := l.ensureRendered(ctx, pool, r); err != nil {
		return err
	}
	want := mcfgv1.MachineConfigPoolStatusConfiguration{
		ObjectReference: corev1.ObjectReference{Name: r.Config.Name},
		Source:          r.Sources,
	}
	pinned, stale := rollout.RollbackPin(pool, r.Config.Name)
	missing := false
	if pinned != "" {
		if _, err := l.mcs.Get(pinned); err != nil {
			// A pin to a config that does not exist would leave every node without one.
			// It is removed, as a stale one is, so that the warning is said once, not at
			// every sync.
			l.recorder.Eventf(pool, corev1.EventTypeWarning, reasonRollbackIgnored, "%s names %s, which is not a MachineConfig: removed the rollback annotations; the pool rolls out %s", rollout.RollbackToAnnotation, pinned, r.Config.Name)
			pinned, stale, missing = "", true, true
		} else {
			// The sources still render to what the rollback left: keep them listed.
			want = mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: pinned}, Source: pool.Spec.Configuration.Source}
		}
	}
	if stale || !equality.Semantic.DeepEqual(pool.Spec.Configuration, want) {
		updated := pool.DeepCopy()
		updated.Spec.Configuration = want
		if stale {
			delete(updated.Annotations, rollout.RollbackToAnnotation)
			delete(updated.Annotations, rollout.RollbackFromAnnotation)
		}
		if stale && !missing {
			l.recorder.Eventf(pool, corev1.EventTypeNormal, reasonRollbackEnded, "The pool's MachineConfigs changed since the rollback to %s: rolling out %s", pool.Annotations[rollout.RollbackToAnnotation], r.Config.Name)
		}
		if pool, err = l.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(ctx, updated, metav1.UpdateOptions{FieldManager: l.fieldManager}); err != nil {
			return fmt.Errorf("point machineconfigpool %s at %s: %w", name, want.Name, err)
		}
		l.log.Info("pool rendered", "pool", name, "config", want.Name, "sources", len(r.Sources), "rollbackPin", pinned != "")
	}
	return l.setRenderDegraded(ctx, pool, nil)
}

// sourceConfigs leaves out rendered configs (owned by a pool): a selector written to
// match on the absence of a label would otherwise feed a pool its own rendered config.
func sourceConfigs(all []*mcfgv1.MachineConfig) []*mcfgv1.MachineConfig {
	out := make([]*mcfgv1.MachineConfig, 0, len(all))
	for _, mc := range all {
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.Kind == "MachineConfigPool" {
			continue
		}
		out = append(out, mc)
	}
	return out
}

// ensureRendered creates the rendered config unless it exists. An existing one is
// never changed: its name is the hash of its spec, and nodes may run it.
func (l *renderLoop) ensureRendered(ctx context.Context, pool *mcfgv1.MachineConfigPool, r *render.Rendered) error {
	mc := r.Config
	if _, err := l.mcs.Get(mc.Name); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	mc = mc.DeepCopy()
	mc.Annotations = map[string]string{render.GeneratedByAnnotation: l.version}
	mc.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: mcfgv1.GroupVersion.String(),
		Kind:       "MachineConfigPool",
		Name:       pool.Name,
		UID:        pool.UID,
		Controller: ptr.To(true),
	}}
	_, err := l.clients.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{FieldManager: l.fieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache had not seen it yet
	case err != nil:
		return fmt.Errorf("create rendered machineconfig %s of pool %s: %w", mc.Name, pool.Name, err)
	}
	l.recorder.Eventf(pool, corev1.EventTypeNormal, reasonRendered, "Created rendered MachineConfig %s from %d MachineConfigs", mc.Name, len(r.Sources))
	return nil
}

// setRenderDegraded writes RenderDegraded (rollout.SetRenderDegraded's message) when it
// changes. While it is True, Degraded is True too, as MCO folds it; the rollout loop
// recomputes Degraded from both once the pool renders again.
func (l *renderLoop) setRenderDegraded(ctx context.Context, pool *mcfgv1.MachineConfigPool, renderErr error) error {
	now := metav1.NewTime(l.clock.Now())
	status := *pool.Status.DeepCopy()
	rollout.SetRenderDegraded(&status, pool.Name, renderErr, now)
	if renderErr != nil {
		if c := rollout.FindCondition(&status, mcfgv1.MachineConfigPoolDegraded); c == nil || c.Status != corev1.ConditionTrue {
			degraded := mcfgv1.MachineConfigPoolCondition{Type: mcfgv1.MachineConfigPoolDegraded, Status: corev1.ConditionTrue, LastTransitionTime: now}
			if c != nil {
				*c = degraded
			} else {
				status.Conditions = append(status.Conditions, degraded)
			}
		}
	}
	if equality.Semantic.DeepEqual(status, pool.Status) {
		return nil
	}
	updated := pool.DeepCopy()
	updated.Status = status
	if _, err := l.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: l.fieldManager}); err != nil {
		return fmt.Errorf("update status of machineconfigpool %s: %w", pool.Name, err)
	}
	return nil
}
