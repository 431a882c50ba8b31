// Package source feeds the TUI from a real cluster: one set of shared informers over the
// objects the panes draw (MachineConfigPools, Nodes, MachineConfigNodes, MachineConfigs,
// MachineConfiguration/cluster, MachineSets, Cluster API MachineDeployments and what
// their boot images are decided by, the coreos-bootimages ConfigMap, and image mode's
// MachineOSConfigs, MachineOSBuilds and OSImageStream), shared
// by every program that subscribes to it, and the kube implementation of
// action.Actions.
//
// It sits between the TUI and platform/kube (main -> tui -> platform): the TUI's model
// knows nothing of informers, and platform/kube knows nothing of the TUI.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	machineinformers "github.com/openshift/client-go/machine/informers/externalversions"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	operatorlisters "github.com/openshift/client-go/operator/listers/operator/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui/model"
)

// UserAgent names the TUI in the API server's logs and audit events.
const UserAgent = "mcotui-tui"

// Options configure a Cluster. The zero value is fine.
type Options struct {
	// Context is the kubeconfig context, shown in the status line.
	Context string
	// Logger receives what the status line cannot hold; nil discards.
	Logger *slog.Logger
	// Now is the clock of Health.Since; nil is time.Now.
	Now func() time.Time
	// ProbeInterval is how often a reconnecting source asks the API server whether it
	// is back; 0 is 2s.
	ProbeInterval time.Duration
	// Buffer is each subscription's channel buffer; 0 is 1024.
	Buffer int
	// Alerts is what pools' alert gates ask before the TUI steps a rollout; nil where
	// no Prometheus was named, and an alert gate then holds the step.
	Alerts kube.AlertSource
	// Rediscover is how often the source looks again for the Cluster API resources it
	// could not watch when it connected (rediscoverCAPI); 0 is a minute.
	Rediscover time.Duration
}

// Cluster is one cluster's informers and the programs subscribed to them.
type Cluster struct {
	info    model.Info
	clients *kube.Clients
	log     *slog.Logger
	now     func() time.Time
	probe   time.Duration
	buffer  int

	// What the informers watch, in the order a snapshot lists them (pools before nodes
	// so that the first Apply places nodes by their pool at once). Once New has
	// returned, rediscoverCAPI may add to both, under mu.
	watched   []watched
	factories []factory
	// synced are done once each informer has listed: waited on, not polled (client-go's
	// WaitForCacheSync looks every 100 ms, which the first full frame would wait for).
	synced []cache.DoneChecker

	pools  mcfglisters.MachineConfigPoolLister
	nodes  corelisters.NodeLister
	mcfg   operatorlisters.MachineConfigurationLister // nil when the API is not served
	hasMCN bool
	mcns   mcfglisters.MachineConfigNodeLister // nil when the API is not served
	alerts kube.AlertSource

	// early are the objects of the initial lists that arrived before every informer had
	// synced (see arrivals): a subscription made meanwhile starts from them, as they are
	// not in the informers' caches yet.
	early    []model.Event
	listed   bool // every informer has synced; early is no longer kept
	protobuf kubernetes.Interface

	cancel    context.CancelFunc
	closeOnce sync.Once
	closed    chan struct{}

	mu           sync.Mutex
	subs         map[*Subscription]struct{}
	health       model.Health
	lastWatchErr time.Time
	stopped      bool
}

// factory is what every generated informer factory does.
type factory interface {
	Start(stop <-chan struct{})
	Shutdown()
}

// watched is one informer and how its objects become events.
type watched struct {
	what     string // "MachineConfigNodes", for messages
	informer cache.SharedIndexInformer
	event    func(obj any) (model.Event, bool)
	// teed: the objects of its initial list reach every subscription as they arrive
	// (arrivals, or the MachineConfigNodes' list as it is decoded), so the informer's
	// Adds of them, once the list is in, are not delivered again (on 5,000 nodes,
	// 5,000 events the program would apply for nothing before it could say connected).
	teed bool
}

// New connects to the cluster cfg points at and starts the informers. It returns without
// waiting for them to sync (WaitForSync does that): a program may open at once and show
// "connecting". It fails when the cluster cannot be reached or does not serve the
// MachineConfigPool and MachineConfig APIs.
//
// ctx bounds the Cluster's life: when it ends, the Cluster closes as if Close had been
// called. cfg is not modified.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent
	if cfg.QPS == 0 {
		// client-go's default (5 a second, bursts of 10) would hold up the start alone,
		// which asks a dozen things at once; after it, the TUI reads by watching and
		// writes only what a user confirmed.
		cfg.QPS, cfg.Burst = 50, 100
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		clients: clients,
		log:     opts.Logger,
		now:     opts.Now,
		probe:   opts.ProbeInterval,
		buffer:  opts.Buffer,
		alerts:  opts.Alerts,
		subs:    map[*Subscription]struct{}{},
		closed:  make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.probe <= 0 {
		c.probe = 2 * time.Second
	}
	if c.buffer <= 0 {
		c.buffer = 1024
	}
	// What the cluster serves, whether MCO runs it and on what platform: each a round
	// trip or three, asked at once, as the screen waits on all of them.
	var (
		served   map[schema.GroupVersionResource]bool
		mco      bool
		platform configv1.PlatformType
		g        errgroup.Group
	)
	g.Go(func() (err error) {
		served, err = servedResources(clients)
		return err
	})
	g.Go(func() (err error) {
		mco, _, err = kube.DetectMCO(ctx, clients.Kube)
		return err
	})
	g.Go(func() error {
		platform = platformOf(ctx, cfg, c.log)
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := readableCAPI(ctx, clients, served); err != nil {
		return nil, err
	}
	for _, r := range []string{"machineconfigpools", "machineconfigs"} {
		if !served[mcfgv1.GroupVersion.WithResource(r)] {
			return nil, fmt.Errorf("the cluster does not serve %s.%s: it runs neither the Machine Config Operator nor mcotui (`mcotui install` sets mcotui up)", r, mcfgv1.GroupVersion)
		}
	}
	c.info = model.Info{Context: opts.Context, Cluster: model.ClusterManaged, MCO: mco, Platform: platform,
		Unreadable: c.unreadable(ctx, served)}
	if mco {
		c.info.Cluster = model.ClusterMCO
	}
	// Core objects (the nodes: thousands, each several kilobytes) in protobuf, which
	// the server encodes and the client decodes several times faster than JSON; the
	// Machine Config APIs are CRDs, which the server serves as JSON only.
	pcfg := rest.CopyConfig(cfg)
	pcfg.ContentType = runtime.ContentTypeProtobuf
	pcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if c.protobuf, err = kubernetes.NewForConfig(pcfg); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.health = model.Health{State: model.Connecting, Since: c.now()}
	if err := c.informers(served); err != nil {
		cancel()
		return nil, err
	}
	for _, f := range c.factories {
		f.Start(runCtx.Done())
	}
	go func() {
		<-runCtx.Done()
		c.Close()
	}()
	go c.watchHealth(runCtx)
	if pending := unwatchedCAPI(served); len(pending) > 0 {
		every := opts.Rediscover
		if every <= 0 {
			every = time.Minute
		}
		go c.rediscoverCAPI(runCtx, pending, every)
	}
	return c, nil
}

// servedResources returns which of the APIs the TUI reads the cluster serves. An
// informer on a resource that is not served would retry, and never sync, forever.
func servedResources(clients *kube.Clients) (map[schema.GroupVersionResource]bool, error) {
	var (
		mu     sync.Mutex
		served = map[schema.GroupVersionResource]bool{}
		g      errgroup.Group
	)
	gvs := []schema.GroupVersion{mcfgv1.GroupVersion, operatorv1.GroupVersion, machinev1beta1.GroupVersion}
	for _, gvr := range capiResources {
		if !slices.Contains(gvs, gvr.GroupVersion()) {
			gvs = append(gvs, gvr.GroupVersion())
		}
	}
	for _, gv := range gvs {
		g.Go(func() error {
			list, err := clients.Kube.Discovery().ServerResourcesForGroupVersion(gv.String())
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("discover the %s API: %w", gv, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range list.APIResources {
				served[gv.WithResource(r.Name)] = true
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return served, nil
}

// capiResources are the Cluster API resources the boot images pane reads: the
// MachineDeployments, and what bootimage.DecideMachineDeployment reads for each.
var capiResources = []schema.GroupVersionResource{
	bootimage.MachineDeploymentsResource, bootimage.AWSMachineTemplatesResource, bootimage.GCPMachineTemplatesResource,
	bootimage.ClustersResource, bootimage.AWSClustersResource,
}

// readableCAPI drops from served the Cluster API resources the user may not list and
// watch in every namespace: an informer on one would retry its refused list forever,
// and the source would never say it is connected. Where Cluster API is not installed
// it asks nothing.
func readableCAPI(ctx context.Context, clients *kube.Clients, served map[schema.GroupVersionResource]bool) error {
	var (
		mu      sync.Mutex
		refused []schema.GroupVersionResource
		g       errgroup.Group
	)
	for _, gvr := range capiResources {
		if !served[gvr] {
			continue
		}
		g.Go(func() error {
			ok, _, err := kube.MayListWatch(ctx, clients.Kube, gvr)
			if err == nil && !ok {
				mu.Lock()
				refused = append(refused, gvr)
				mu.Unlock()
			}
			return err
		})
	}
	err := g.Wait()
	for _, gvr := range refused {
		delete(served, gvr)
	}
	return err
}

// platformOf reads Infrastructure/cluster's platform, which decides the default boot
// image mode. Clusters without the config.openshift.io API (every cluster but
// OpenShift) have none; that is not an error.
func platformOf(ctx context.Context, cfg *rest.Config, log *slog.Logger) configv1.PlatformType {
	cc, err := configclient.NewForConfig(cfg)
	if err != nil {
		return ""
	}
	infra, err := cc.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			log.Debug("no platform: cannot read Infrastructure/cluster", "err", err)
		}
		return ""
	}
	if infra.Status.PlatformStatus != nil {
		return infra.Status.PlatformStatus.Type
	}
	//lint:ignore SA1019 clusters installed before platformStatus existed set only this field
	return infra.Status.Platform
}

// informers builds the informers of every served API. Resync is off: the caches are
// complete without it, and a resync of thousands of nodes would be thousands of
// no-op events.
func (c *Cluster) informers(served map[schema.GroupVersionResource]bool) error {
	kf := kubeinformers.NewSharedInformerFactory(c.protobuf, 0)
	// Only the one ConfigMap: a namespace's ConfigMaps are none of the TUI's business.
	cmf := kubeinformers.NewSharedInformerFactoryWithOptions(c.clients.Kube, 0,
		kubeinformers.WithNamespace(bootimage.ConfigMapNamespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", bootimage.ConfigMapName).String()
		}))
	mf := mcfginformers.NewSharedInformerFactory(c.clients.MachineConfig, 0)
	c.factories = append(c.factories, kf, cmf, mf)

	pools := mf.Machineconfiguration().V1().MachineConfigPools()
	add := func(what string, inf cache.SharedIndexInformer, event func(any) (model.Event, bool)) {
		c.watched = append(c.watched, watched{what: what, informer: inf, event: event})
	}
	add("MachineConfigPools", pools.Informer(), func(o any) (model.Event, bool) {
		p, ok := o.(*mcfgv1.MachineConfigPool)
		return model.PoolEvent(p), ok
	})
	// Nodes and MachineConfigNodes are the thousands: their informers tee what they
	// list as it arrives.
	nodeEvent := func(o any) (model.Event, bool) {
		n, ok := o.(*corev1.Node)
		return model.NodeEvent(n), ok
	}
	kf.InformerFor(&corev1.Node{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Nodes().List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().Nodes().Watch(ctx, o)
			},
		}, client)
		return cache.NewSharedIndexInformer(newArrivals(lw, c.arrive(nodeEvent)), &corev1.Node{}, resync, cache.Indexers{})
	})
	nodes := kf.Core().V1().Nodes()
	c.pools, c.nodes = pools.Lister(), nodes.Lister()
	c.watched = append(c.watched, watched{what: "Nodes", informer: nodes.Informer(), event: nodeEvent, teed: true})
	if served[mcfgv1.GroupVersion.WithResource("machineconfignodes")] {
		c.hasMCN = true
		mcnEvent := func(o any) (model.Event, bool) {
			m, ok := o.(*mcfgv1.MachineConfigNode)
			return model.MCNEvent(m), ok
		}
		arrive := c.arrive(mcnEvent)
		mf.InformerFor(&mcfgv1.MachineConfigNode{}, func(client mcfgclient.Interface, resync time.Duration) cache.SharedIndexInformer {
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return kube.ListMachineConfigNodes(ctx, client, o, func(m *mcfgv1.MachineConfigNode) { arrive(m) })
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return client.MachineconfigurationV1().MachineConfigNodes().Watch(ctx, o)
				},
			}
			// Listed, not streamed as a watch's initial events (WatchList): see listOnly.
			return cache.NewSharedIndexInformer(newListArrivals(lw), &mcfgv1.MachineConfigNode{}, resync, cache.Indexers{})
		})
		mcns := mf.Machineconfiguration().V1().MachineConfigNodes()
		c.mcns = mcns.Lister()
		c.watched = append(c.watched, watched{what: "MachineConfigNodes", informer: mcns.Informer(), event: mcnEvent, teed: true})
	}
	add("MachineConfigs", mf.Machineconfiguration().V1().MachineConfigs().Informer(), func(o any) (model.Event, bool) {
		m, ok := o.(*mcfgv1.MachineConfig)
		return model.MachineConfigEvent(m), ok
	})
	// What generates MachineConfigs (MCO on OpenShift, mcotui's controller elsewhere):
	// tens of objects at most, where they are served.
	if served[mcfgv1.GroupVersion.WithResource("kubeletconfigs")] {
		add("KubeletConfigs", mf.Machineconfiguration().V1().KubeletConfigs().Informer(), func(o any) (model.Event, bool) {
			kc, ok := o.(*mcfgv1.KubeletConfig)
			return model.KubeletConfigEvent(kc), ok
		})
	}
	if served[mcfgv1.GroupVersion.WithResource("containerruntimeconfigs")] {
		add("ContainerRuntimeConfigs", mf.Machineconfiguration().V1().ContainerRuntimeConfigs().Informer(), func(o any) (model.Event, bool) {
			c, ok := o.(*mcfgv1.ContainerRuntimeConfig)
			return model.ContainerRuntimeConfigEvent(c), ok
		})
	}
	// Image mode and OS streams, where the cluster's CRDs have them (OpenShift 4.19+
	// for builds, 2026's Default CRDs for streams): tens of objects.
	if served[mcfgv1.GroupVersion.WithResource("machineosconfigs")] {
		add("MachineOSConfigs", mf.Machineconfiguration().V1().MachineOSConfigs().Informer(), func(o any) (model.Event, bool) {
			m, ok := o.(*mcfgv1.MachineOSConfig)
			return model.MachineOSConfigEvent(m), ok
		})
	}
	if served[mcfgv1.GroupVersion.WithResource("machineosbuilds")] {
		add("MachineOSBuilds", mf.Machineconfiguration().V1().MachineOSBuilds().Informer(), func(o any) (model.Event, bool) {
			m, ok := o.(*mcfgv1.MachineOSBuild)
			return model.MachineOSBuildEvent(m), ok
		})
	}
	if served[mcfgv1.GroupVersion.WithResource("osimagestreams")] {
		add("OSImageStreams", mf.Machineconfiguration().V1().OSImageStreams().Informer(), func(o any) (model.Event, bool) {
			m, ok := o.(*mcfgv1.OSImageStream)
			return model.OSImageStreamEvent(m), ok
		})
	}
	if served[operatorv1.GroupVersion.WithResource("machineconfigurations")] {
		of := operatorinformers.NewSharedInformerFactoryWithOptions(c.clients.Operator, 0,
			operatorinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", bootimage.MachineConfigurationName).String()
			}))
		c.factories = append(c.factories, of)
		mcfg := of.Operator().V1().MachineConfigurations()
		c.mcfg = mcfg.Lister()
		add("MachineConfigurations", mcfg.Informer(), func(o any) (model.Event, bool) {
			m, ok := o.(*operatorv1.MachineConfiguration)
			return model.MachineConfigurationEvent(m), ok
		})
	}
	if served[machinev1beta1.GroupVersion.WithResource("machinesets")] {
		msf := machineinformers.NewSharedInformerFactoryWithOptions(c.clients.Machine, 0,
			machineinformers.WithNamespace(bootimage.MachineAPINamespace))
		c.factories = append(c.factories, msf)
		add("MachineSets", msf.Machine().V1beta1().MachineSets().Informer(), func(o any) (model.Event, bool) {
			m, ok := o.(*machinev1beta1.MachineSet)
			return model.MachineSetEvent(m), ok
		})
	}
	// Cluster API's MachineDeployments and what their boot image decision reads, where
	// served and readable (readableCAPI): tens of objects.
	var df dynamicinformer.DynamicSharedInformerFactory
	for _, gvr := range capiResources {
		if !served[gvr] {
			continue
		}
		if df == nil {
			df = dynamicinformer.NewDynamicSharedInformerFactory(c.clients.Dynamic, 0)
			c.factories = append(c.factories, df)
		}
		c.watched = append(c.watched, capiWatched(df, gvr))
	}
	add("ConfigMap "+bootimage.ConfigMapNamespace+"/"+bootimage.ConfigMapName, cmf.Core().V1().ConfigMaps().Informer(), func(o any) (model.Event, bool) {
		m, ok := o.(*corev1.ConfigMap)
		return model.BootImagesEvent(m), ok
	})

	for _, w := range c.watched {
		if err := c.handle(w); err != nil {
			return err
		}
		c.synced = append(c.synced, w.informer.HasSyncedChecker())
	}
	return nil
}

// handle sets w's informer up to deliver its objects, stripped, to every subscription,
// and to report its watch's errors.
func (c *Cluster) handle(w watched) error {
	if err := w.informer.SetTransform(stripForCache); err != nil {
		return fmt.Errorf("watch %s: %w", w.what, err)
	}
	if err := w.informer.SetWatchErrorHandler(c.watchError(w.what)); err != nil {
		return fmt.Errorf("watch %s: %w", w.what, err)
	}
	if _, err := w.informer.AddEventHandler(c.handler(w)); err != nil {
		return fmt.Errorf("watch %s: %w", w.what, err)
	}
	return nil
}

// arrive is what arrivals calls with an object of an initial list: it is an event for
// every subscription at once, and one for those to come until the lists are in.
func (c *Cluster) arrive(event func(any) (model.Event, bool)) func(runtime.Object) {
	return func(obj runtime.Object) {
		o, _ := stripForCache(obj)
		e, ok := event(o)
		if !ok {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.listed {
			c.early = append(c.early, e)
		}
		for s := range c.subs {
			s.enqueue(e)
		}
	}
}

// handler turns an informer's notifications into events for every subscription.
func (c *Cluster) handler(w watched) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if w.teed && isInInitialList {
				// Delivered as it arrived, or in the early events a subscription made
				// since starts from (see Subscribe); a change to it since is an
				// Update, delivered.
				return
			}
			if e, ok := w.event(obj); ok {
				c.broadcast(e)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, oerr := meta(oldObj)
			n, nerr := meta(newObj)
			if oerr == nil && nerr == nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a relist that found nothing new
			}
			if e, ok := w.event(newObj); ok {
				c.broadcast(e)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if e, ok := w.event(obj); ok {
				c.broadcast(model.Deleted(e))
			}
		},
	}
}

func meta(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// watchError is a reflector's error handler: the informer keeps retrying on its own,
// so the source says it is reconnecting and why. A watch the server closed (a bare
// io.EOF, not one wrapped in a failed request) or expired (410 Gone, answered by a
// relist) is routine and says nothing, as in client-go's DefaultWatchErrorHandler.
func (c *Cluster) watchError(what string) cache.WatchErrorHandler {
	return func(_ *cache.Reflector, err error) {
		if err == io.EOF || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) { //nolint:errorlint // only the bare EOF of a closed watch is routine
			return
		}
		c.mu.Lock()
		c.lastWatchErr = c.now()
		c.mu.Unlock()
		c.log.Warn("watch failed; retrying", "what", what, "err", err)
		c.setHealth(model.Degraded, fmt.Sprintf("watch %s: %v", what, err))
	}
}

// watchHealth keeps the source's health: connected once every informer has synced;
// then, every probe interval, it asks the API server for its version. An informer whose
// API server is unreachable retries its watch quietly (client-go treats a refused
// connection as retriable and tells no error handler), so the probe is what notices an
// outage. Once the API server answers again and no watch has failed for two intervals,
// the reflectors are back and the source is connected again.
func (c *Cluster) watchHealth(ctx context.Context) {
	if !cache.WaitFor(ctx, "", c.synced...) {
		return
	}
	c.markSynced()
	t := time.NewTicker(c.probe)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(c.probe, time.Second))
		err := c.clients.Kube.Discovery().RESTClient().Get().AbsPath("/version").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.mu.Lock()
			c.lastWatchErr = c.now()
			c.mu.Unlock()
			c.setHealth(model.Degraded, fmt.Sprintf("API server: %v", err))
			continue
		}
		c.mu.Lock()
		state, lastErr := c.health.State, c.lastWatchErr
		c.mu.Unlock()
		if state == model.Degraded && c.now().Sub(lastErr) >= 2*c.probe {
			c.setHealth(model.Connected, "")
		}
	}
}

// markSynced says connected the first time every informer has synced, and drops the
// early arrivals, which the caches now hold.
func (c *Cluster) markSynced() {
	c.mu.Lock()
	connecting := c.health.State == model.Connecting
	c.listed, c.early = true, nil
	c.mu.Unlock()
	if connecting {
		c.setHealth(model.Connected, "")
	}
}

// setHealth records the source's health and tells every subscription, unless nothing
// changed.
func (c *Cluster) setHealth(state model.Connection, err string) {
	c.mu.Lock()
	if c.stopped || (c.health.State == state && c.health.Err == err) {
		c.mu.Unlock()
		return
	}
	since := c.health.Since
	if c.health.State != state {
		since = c.now()
	}
	c.health = model.Health{State: state, Err: err, Since: since}
	h := c.health
	c.mu.Unlock()
	c.broadcast(model.HealthEvent(h))
}

func (c *Cluster) broadcast(e model.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.subs {
		s.enqueue(e)
	}
}

// Info is what the status line says about the cluster.
func (c *Cluster) Info() model.Info { return c.info }

// Health is the source's health now.
func (c *Cluster) Health() model.Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// Clients are the cluster's clients, for the kube Actions.
func (c *Cluster) Clients() *kube.Clients { return c.clients }

// WaitForSync waits until every informer has listed its objects. It fails, with the
// last watch error when there is one, when ctx ends or the Cluster closes first.
func (c *Cluster) WaitForSync(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	if cache.WaitFor(ctx, "", c.synced...) {
		c.markSynced()
		return nil
	}
	if h := c.Health(); h.Err != "" {
		return fmt.Errorf("the cluster's objects are not listed yet: %s", h.Err)
	}
	return errors.New("the cluster's objects are not listed yet: stopped waiting")
}

// Subscribe returns a new subscription: a model.Source for one program. The caller
// closes it when the program ends.
func (c *Cluster) Subscribe() *Subscription {
	s := newSubscription(c.info, c.buffer, c.unsubscribe)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		// A closed source: the program shows it disconnected.
		s.snapshot = []model.Event{model.HealthEvent(c.health)}
		s.unsubscribe = nil
		s.Close()
		return s
	}
	// Registered before the caches are listed, under the lock the handlers broadcast
	// under: a change is either in the list or delivered after it (or both, which the
	// Store shrugs off), never lost between the two.
	c.subs[s] = struct{}{}
	var snap []model.Event
	for _, w := range c.watched {
		for _, obj := range w.informer.GetStore().List() {
			if e, ok := w.event(obj); ok {
				snap = append(snap, e)
			}
		}
	}
	// What arrived of the lists still being read: often the same objects as those
	// already cached (the Store applies both as one), but before the informers sync,
	// the only ones there are.
	snap = append(snap, c.early...)
	s.snapshot = append(snap, model.HealthEvent(c.health))
	return s
}

func (c *Cluster) unsubscribe(s *Subscription) {
	c.mu.Lock()
	delete(c.subs, s)
	c.mu.Unlock()
}

// Subscribers is the number of open subscriptions.
func (c *Cluster) Subscribers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

// Close stops the informers and closes every subscription's channel, so that each
// program says the source is disconnected. Close may be called more than once.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		// Under the lock: rediscoverCAPI adds a factory, unless the context is over.
		c.mu.Lock()
		factories := slices.Clone(c.factories)
		c.mu.Unlock()
		for _, f := range factories {
			f.Shutdown()
		}
		c.mu.Lock()
		c.stopped = true
		subs := slices.Collect(maps.Keys(c.subs))
		clear(c.subs)
		c.mu.Unlock()
		for _, s := range subs {
			s.Close()
		}
		close(c.closed)
	})
	<-c.closed
}
