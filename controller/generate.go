package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube"
)

// KubeletBase says where the cluster keeps the base kubelet configuration that
// KubeletConfigs are merged onto, and where the node's kubelet reads it. The defaults
// are kubeadm's (generated.DefaultKubeletBase*): other distributions name theirs with
// `mcotui controller --kubelet-base-configmap` and `--kubelet-config-path`; the
// controller never looks anywhere else.
type KubeletBase struct {
	Namespace, Name, Key string
	Path                 string
}

func (b *KubeletBase) defaults() {
	if b.Namespace == "" {
		b.Namespace = generated.DefaultKubeletBaseNamespace
	}
	if b.Name == "" {
		b.Name = generated.DefaultKubeletBaseName
	}
	if b.Key == "" {
		b.Key = generated.DefaultKubeletBaseKey
	}
	if b.Path == "" {
		b.Path = generated.DefaultKubeletConfigPath
	}
}

// Kinds of the generate loop's keys: "<kind>/<name>".
const (
	kindKubeletConfig          = "KubeletConfig"
	kindContainerRuntimeConfig = "ContainerRuntimeConfig"
)

func generateKey(kind, name string) string { return kind + "/" + name }

// generateLoop makes MCO's generated MachineConfigs from KubeletConfigs and
// ContainerRuntimeConfigs (core/generated), owned by them and named in finalizers on
// them, so that deleting one deletes its MachineConfigs even where no garbage
// collector runs, as MCO does; and writes their conditions.
type generateLoop struct {
	clients    *kube.Clients
	kcs        mcfglisters.KubeletConfigLister
	crcs       mcfglisters.ContainerRuntimeConfigLister
	pools      mcfglisters.MachineConfigPoolLister
	mcs        mcfglisters.MachineConfigLister
	nodes      corelisters.NodeLister
	configMaps corelisters.ConfigMapLister // the base's namespace, the base only
	base       KubeletBase
	clock      clock.PassiveClock
	log        *slog.Logger
	version    string
	// fieldManager names the loop in managedFields.
	fieldManager string
}

func (l *generateLoop) sync(ctx context.Context, key string) error {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case kindKubeletConfig:
		return syncInput(ctx, l, l.kubeletInput(), name)
	case kindContainerRuntimeConfig:
		return syncInput(ctx, l, l.containerRuntimeInput(), name)
	}
	return fmt.Errorf("generate: unknown key %q", key)
}

// failure is an outcome written to the object's conditions: a sync that ends in one
// is not retried, since only a change (of the object, a pool, a node, the base) can
// change it, and each of those syncs it again.
type failure struct{ generated.Outcome }

func (f *failure) Error() string { return f.Err.Error() }

func fail(reason string, err error) error {
	return &failure{generated.Outcome{Err: err, Reason: reason}}
}

// outcome splits a sync's error into the outcome to record and the error to retry on.
func outcome(err error) (generated.Outcome, error) {
	var f *failure
	if err == nil {
		return generated.Outcome{}, nil
	}
	if errors.As(err, &f) {
		return f.Outcome, nil
	}
	return generated.Outcome{Err: err, Reason: generated.ReasonConflict}, err
}

// kubeletBase reads the base kubelet configuration from its ConfigMap.
func (l *generateLoop) kubeletBase() (generated.KubeletBase, error) {
	where := l.base.Namespace + "/" + l.base.Name
	if l.configMaps == nil {
		return generated.KubeletBase{}, fail(generated.ReasonBase, fmt.Errorf("the controller may not read the base kubelet configuration, ConfigMap %s: grant its service account get, list and watch on it (mcotui install grants them on kube-system/kubelet-config)", where))
	}
	cm, err := l.configMaps.ConfigMaps(l.base.Namespace).Get(l.base.Name)
	if apierrors.IsNotFound(err) {
		return generated.KubeletBase{}, fail(generated.ReasonBase, fmt.Errorf("the base kubelet configuration, ConfigMap %s, does not exist: kubeadm writes it; on another distribution, name the ConfigMap that holds the kubelet's configuration with `mcotui controller --kubelet-base-configmap NAMESPACE/NAME[:KEY]` and the file the kubelet reads with --kubelet-config-path", where))
	}
	if err != nil {
		return generated.KubeletBase{}, fmt.Errorf("configmap %s: %w", where, err)
	}
	data, ok := cm.Data[l.base.Key]
	if !ok {
		return generated.KubeletBase{}, fail(generated.ReasonBase, fmt.Errorf("the base kubelet configuration, ConfigMap %s, has no key %q", where, l.base.Key))
	}
	return generated.KubeletBase{Config: []byte(data), Path: l.base.Path}, nil
}

func (l *generateLoop) allPools() ([]*mcfgv1.MachineConfigPool, error) {
	return l.pools.List(labels.Everything())
}

// suffix gives meta its suffix on pool (generated.SuffixFor) among the sources listed
// that select pool. The list is read from the API server, not the cache, when meta has
// no suffix yet: the suffix another object was just given must count.
func suffix(kind string, meta metav1.ObjectMeta, pool *mcfgv1.MachineConfigPool, list func() ([]metav1.ObjectMeta, []*metav1.LabelSelector, error)) (string, error) {
	self := generated.SourceOf(meta)
	if self.HasSuffix {
		return self.Suffix, nil
	}
	metas, sels, err := list()
	if err != nil {
		return "", err
	}
	var others []generated.Source
	for i, o := range metas {
		ps, err := generated.SelectPools(sels[i], []*mcfgv1.MachineConfigPool{pool})
		if err != nil || len(ps) == 0 {
			continue
		}
		others = append(others, generated.SourceOf(o))
	}
	s, err := generated.SuffixFor(kind, self, others)
	if err != nil {
		return "", fail(generated.ReasonConflict, err)
	}
	return s, nil
}

// owned: the generated MachineConfigs whose controller is uid.
func (l *generateLoop) owned(uid types.UID) ([]*mcfgv1.MachineConfig, error) {
	all, err := l.mcs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*mcfgv1.MachineConfig
	for _, mc := range all {
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.UID == uid {
			out = append(out, mc)
		}
	}
	return out, nil
}

// apply creates or updates the generated MachineConfigs want, and deletes the ones uid
// controls that want no longer holds (a pool no longer selected).
func (l *generateLoop) apply(ctx context.Context, uid types.UID, owner string, want []*mcfgv1.MachineConfig) error {
	client := l.clients.MachineConfig.MachineconfigurationV1().MachineConfigs()
	for _, mc := range want {
		mc.Annotations = map[string]string{render.GeneratedByAnnotation: l.version}
		cur, err := l.mcs.Get(mc.Name)
		if apierrors.IsNotFound(err) {
			if _, err := client.Create(ctx, mc, metav1.CreateOptions{FieldManager: l.fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create machineconfig %s: %w", mc.Name, err)
			}
			l.log.Info("generated MachineConfig created", "machineconfig", mc.Name, "from", owner)
			continue
		}
		if err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(cur); ref == nil || ref.UID != uid {
			return fail(generated.ReasonConflict, fmt.Errorf("MachineConfig %s exists and is not generated from %s: rename or delete it", mc.Name, owner))
		}
		if equality.Semantic.DeepEqual(cur.Spec, mc.Spec) && maps.Equal(cur.Labels, mc.Labels) && maps.Equal(cur.Annotations, mc.Annotations) {
			continue
		}
		next := cur.DeepCopy()
		next.Spec, next.Labels, next.Annotations, next.OwnerReferences = mc.Spec, mc.Labels, mc.Annotations, mc.OwnerReferences
		if _, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: l.fieldManager}); err != nil {
			return fmt.Errorf("update machineconfig %s: %w", mc.Name, err)
		}
		l.log.Info("generated MachineConfig updated", "machineconfig", mc.Name, "from", owner)
	}
	have, err := l.owned(uid)
	if err != nil {
		return err
	}
	for _, mc := range have {
		if slices.ContainsFunc(want, func(w *mcfgv1.MachineConfig) bool { return w.Name == mc.Name }) {
			continue
		}
		if err := l.deleteMC(ctx, mc.Name, mc.UID); err != nil {
			return err
		}
		l.log.Info("generated MachineConfig deleted: its pool is no longer selected", "machineconfig", mc.Name, "from", owner)
	}
	return nil
}

// deleteMC deletes a generated MachineConfig, only the one of that uid.
func (l *generateLoop) deleteMC(ctx context.Context, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := l.clients.MachineConfig.MachineconfigurationV1().MachineConfigs().Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete machineconfig %s: %w", name, err)
	}
	return nil
}

// cascade deletes the MachineConfigs an object being deleted generated: those it
// controls and those its finalizers name (MCO's cascadeDelete), then lets it go.
// It returns the finalizers that remain.
func (l *generateLoop) cascade(ctx context.Context, meta metav1.Object, kind string) ([]string, error) {
	have, err := l.owned(meta.GetUID())
	if err != nil {
		return nil, err
	}
	for _, mc := range have {
		if err := l.deleteMC(ctx, mc.Name, mc.UID); err != nil {
			return nil, err
		}
	}
	var keep []string
	for _, f := range meta.GetFinalizers() {
		if !isGeneratedName(f, kind) {
			keep = append(keep, f)
			continue
		}
		// A finalizer names a MachineConfig this object made: delete it only if this
		// object controls it (it may have been made anew by another).
		if mc, err := l.mcs.Get(f); err == nil {
			if ref := metav1.GetControllerOf(mc); ref != nil && ref.UID == meta.GetUID() {
				if err := l.deleteMC(ctx, f, mc.UID); err != nil {
					return nil, err
				}
			}
		}
	}
	return keep, nil
}

// isGeneratedName: name is a generated MachineConfig's name of kind.
func isGeneratedName(name, kind string) bool {
	if !strings.HasPrefix(name, "99-") {
		return false
	}
	i := strings.LastIndex(name, "-generated-"+kind)
	if i < 0 {
		return false
	}
	rest := name[i+len("-generated-"+kind):]
	return rest == "" || (len(rest) == 2 && rest[0] == '-' && rest[1] >= '1' && rest[1] <= '9')
}

// finalizers returns cur with the names of want added.
func withFinalizers(cur []string, want []*mcfgv1.MachineConfig, kind string) []string {
	out := slices.DeleteFunc(slices.Clone(cur), func(f string) bool {
		return isGeneratedName(f, kind) && !slices.ContainsFunc(want, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == f })
	})
	for _, mc := range want {
		if !slices.Contains(out, mc.Name) {
			out = append(out, mc.Name)
		}
	}
	return out
}

// generateServed: the cluster serves KubeletConfigs and ContainerRuntimeConfigs and
// the controller may list them. An informer that may not list never syncs, and the
// controller waits for every informer before any loop runs: a controller upgraded
// before its RBAC would render nothing at all.
func generateServed(ctx context.Context, c *kube.Clients) (bool, string, error) {
	for _, r := range []string{"kubeletconfigs", "containerruntimeconfigs"} {
		ok, err := kube.Served(c.Kube.Discovery(), mcfgv1.GroupVersion, r)
		if err != nil || !ok {
			return false, "the cluster does not serve their CustomResourceDefinitions (`mcotui install` installs them)", err
		}
	}
	api := c.MachineConfig.MachineconfigurationV1()
	one := metav1.ListOptions{Limit: 1}
	if _, err := api.KubeletConfigs().List(ctx, one); apierrors.IsForbidden(err) {
		return false, "the controller may not list kubeletconfigs (apply the RBAC of `mcotui install`)", nil
	} else if err != nil {
		return false, "", err
	}
	if _, err := api.ContainerRuntimeConfigs().List(ctx, one); apierrors.IsForbidden(err) {
		return false, "the controller may not list containerruntimeconfigs (apply the RBAC of `mcotui install`)", nil
	} else if err != nil {
		return false, "", err
	}
	return true, "", nil
}

// baseReadable: the controller may list the base's ConfigMap (by name). When it may
// not, the base informer is not started (it would never sync) and KubeletConfigs fail
// with what to grant.
func baseReadable(ctx context.Context, c *kube.Clients, b KubeletBase) (bool, error) {
	_, err := c.Kube.CoreV1().ConfigMaps(b.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + b.Name, Limit: 1})
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	return err == nil, err
}

// generateInformers builds the generate loop on the shared informers, with a
// ConfigMap informer of its own for the base (by name, in its namespace only), and
// the registrations of its event handlers, for the caller to make once the loop's
// queue exists.
func generateInformers(cfg *Config, mcfgF mcfginformers.SharedInformerFactory, nodes coreinformers.NodeInformer, baseOK bool) (
	*generateLoop, []func(add func(string)) (cache.ResourceEventHandlerRegistration, error), []cache.InformerSynced, kubeinformers.SharedInformerFactory) {
	kcs := mcfgF.Machineconfiguration().V1().KubeletConfigs()
	crcs := mcfgF.Machineconfiguration().V1().ContainerRuntimeConfigs()
	pools := mcfgF.Machineconfiguration().V1().MachineConfigPools()
	mcs := mcfgF.Machineconfiguration().V1().MachineConfigs()
	cmF := kubeinformers.NewSharedInformerFactoryWithOptions(cfg.Clients.Kube, cfg.Resync,
		kubeinformers.WithNamespace(cfg.KubeletBase.Namespace),
		kubeinformers.WithTweakListOptions(byName(cfg.KubeletBase.Name)))
	cms := cmF.Core().V1().ConfigMaps()
	gl := &generateLoop{
		clients: cfg.Clients, kcs: kcs.Lister(), crcs: crcs.Lister(), pools: pools.Lister(), mcs: mcs.Lister(),
		nodes: nodes.Lister(), base: cfg.KubeletBase,
		clock: cfg.Clock, log: cfg.Logger.With("loop", "generate"), version: cfg.Version, fieldManager: cfg.Identity,
	}
	allKCs := func() []string {
		list, _ := kcs.Lister().List(labels.Everything())
		keys := make([]string, len(list))
		for i, k := range list {
			keys[i] = generateKey(kindKubeletConfig, k.Name)
		}
		return keys
	}
	allCRCs := func() []string {
		list, _ := crcs.Lister().List(labels.Everything())
		keys := make([]string, len(list))
		for i, k := range list {
			keys[i] = generateKey(kindContainerRuntimeConfig, k.Name)
		}
		return keys
	}
	// metaOnly: an update of status alone, the loop's own as a rule.
	metaSame := func(a, b metav1.ObjectMeta) bool {
		return a.Generation == b.Generation && a.ResourceVersion != b.ResourceVersion &&
			maps.Equal(a.Annotations, b.Annotations) && slices.Equal(a.Finalizers, b.Finalizers) &&
			(a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil)
	}
	regs := []func(add func(string)) (cache.ResourceEventHandlerRegistration, error){
		func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			return kcs.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.KubeletConfig) []string {
				if old != nil && cur != nil && metaSame(old.ObjectMeta, cur.ObjectMeta) {
					return nil
				}
				// Another KubeletConfig's arrival or departure may free or take a suffix;
				// only the object itself is synced: names, once given, stay.
				return []string{generateKey(kindKubeletConfig, cur.Name)}
			}, add))
		},
		func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			return crcs.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.ContainerRuntimeConfig) []string {
				if old != nil && cur != nil && metaSame(old.ObjectMeta, cur.ObjectMeta) {
					return nil
				}
				return []string{generateKey(kindContainerRuntimeConfig, cur.Name)}
			}, add))
		},
		func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			// A pool's labels decide which objects select it; its node selector which
			// nodes' runtimes count.
			return pools.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.MachineConfigPool) []string {
				if old != nil && maps.Equal(old.Labels, cur.Labels) && equalSelectors(old, cur) && old.ResourceVersion != cur.ResourceVersion {
					return nil
				}
				return append(allKCs(), allCRCs()...)
			}, add))
		},
		func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			// A generated MachineConfig changed or deleted by hand is made again.
			return mcs.Informer().AddEventHandler(handler(func(_, cur *mcfgv1.MachineConfig) []string {
				ref := metav1.GetControllerOf(cur)
				if ref == nil || ref.APIVersion != mcfgv1.GroupVersion.String() {
					return nil
				}
				switch ref.Kind {
				case kindKubeletConfig, kindContainerRuntimeConfig:
					return []string{generateKey(ref.Kind, ref.Name)}
				}
				return nil
			}, add))
		},
		func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			return nodes.Informer().AddEventHandler(handler(func(old, cur *corev1.Node) []string {
				if old != nil && old.ResourceVersion != cur.ResourceVersion && maps.Equal(old.Labels, cur.Labels) &&
					old.Status.NodeInfo.ContainerRuntimeVersion == cur.Status.NodeInfo.ContainerRuntimeVersion {
					return nil
				}
				return allCRCs()
			}, add))
		},
	}
	synced := []cache.InformerSynced{kcs.Informer().HasSynced, crcs.Informer().HasSynced}
	if baseOK {
		gl.configMaps = cms.Lister()
		regs = append(regs, func(add func(string)) (cache.ResourceEventHandlerRegistration, error) {
			return cms.Informer().AddEventHandler(handler(func(_, _ *corev1.ConfigMap) []string { return allKCs() }, add))
		})
		synced = append(synced, cms.Informer().HasSynced)
	}
	return gl, regs, synced, cmF
}
