package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	machinescheme "github.com/openshift/client-go/machine/clientset/versioned/scheme"
	machineinformers "github.com/openshift/client-go/machine/informers/externalversions"
	machinev1informers "github.com/openshift/client-go/machine/informers/externalversions/machine/v1"
	mcfgscheme "github.com/openshift/client-go/machineconfiguration/clientset/versioned/scheme"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfgv1informers "github.com/openshift/client-go/machineconfiguration/informers/externalversions/machineconfiguration/v1"
	operatorscheme "github.com/openshift/client-go/operator/clientset/versioned/scheme"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube"
)

// Defaults of Config.
const (
	// The controller's leader election timing: kube.Election's default, OpenShift's
	// recommended one.
	DefaultLeaseDuration = kube.DefaultLeaseDuration
	DefaultRenewDeadline = kube.DefaultRenewDeadline
	DefaultRetryPeriod   = kube.DefaultRetryPeriod
	DefaultResync        = 10 * time.Minute
	// DefaultRediscover is how often the boot image loop asks discovery whether Cluster
	// API's resources it does not watch yet are served (and readable) now: its CRDs are
	// often installed after the controller (watchCAPI). One discovery request a minute,
	// and none once everything is watched.
	DefaultRediscover = time.Minute

	// DefaultStatusInterval is how long the controller may hold back a pool status
	// write that only moves its machine counts (driverOptions.StatusInterval). MCO's
	// node controller syncs a pool at most every 5 s (defaultUpdateDelay), so its counts
	// lag as much.
	DefaultStatusInterval = time.Second

	// DefaultQPS leaves the controller's clients without a client-side rate limit: the
	// API server's priority and fairness paces them, as SIG API Machinery advises and
	// controller-runtime does by default since v0.21. The driver bounds its own writes
	// in flight (maxConcurrentTargets), so nothing opens thousands of requests at once.
	// A limit held targets back behind the writes queued before them: at 50 requests a
	// second, a new target's taints on 5,000 nodes alone take 100 s, and every slot
	// freed meanwhile waited behind them. BenchmarkRollout, agents that finish at once,
	// 50/100 against no limit in one session: 1,000 nodes updated in 38 s against 12 s
	// (a freed slot's next target p50 187 ms against 35 ms), 5,000 nodes in 198 s
	// against 70 s (979 ms against 173 ms).
	// DefaultBurst is the burst when --kube-api-qps sets a limit.
	DefaultQPS   = -1
	DefaultBurst = 100

	// Component is the controller's name as the source of its Events.
	Component = "mcotui-controller"
)

// ErrMCOPresent is returned by Run on a cluster where the Machine Config Operator runs;
// the error's text says what was found.
var ErrMCOPresent = errors.New("mcotui's controller runs only on clusters without MCO; on OpenShift, mcotui's status, rollout, pause, resume and bootimages commands act through MCO's API instead")

// Config configures Run. Clients is required; every other field has a default.
type Config struct {
	Clients *kube.Clients

	// Namespace holds the Lease. Default install.Namespace.
	Namespace string
	// LeaseName names the Lease. Default install.LeaseName.
	LeaseName string
	// Identity names this controller in the Lease and, as field manager, in the
	// managedFields of what it writes. Default: the host name and the process id.
	Identity string
	// Leader election timing, client-go's meaning. Defaults DefaultLeaseDuration,
	// DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Resync is the informers' resync period: how often every object is synced again
	// even without a change. Default DefaultResync.
	Resync time.Duration

	// Rediscover is how often the boot image loop looks again for the Cluster API
	// resources it could not watch at the start of its term. Default DefaultRediscover.
	Rediscover time.Duration

	// Platform is the infrastructure platform for boot images: the mode MCO applies
	// when MachineConfiguration/cluster names none. Default: the platform every
	// MachineSet's providerSpec names, when they agree (see bootimage.InferPlatform).
	Platform configv1.PlatformType

	// KubeletBase is where the base kubelet configuration that KubeletConfigs are
	// merged onto is kept, and where nodes read it. Default: kubeadm's places.
	KubeletBase KubeletBase

	// Alerts is the Prometheus the pools' alert gates ask. nil: a pool with an alert
	// gate is held, saying no Prometheus is configured.
	Alerts kube.AlertSource

	// Clock times conditions, reads the pools' maintenance windows and counts the
	// pools' status interval (DefaultStatusInterval) and the waits until a pool is
	// synced again: a fake clock that never moves holds count-only status changes back
	// for good. Default: the real clock.
	Clock clock.PassiveClock
	// Logger receives the controller's log. Default: discard.
	Logger *slog.Logger
	// Version is written to rendered MachineConfigs (render.GeneratedByAnnotation).
	Version string

	// Metrics, when set, receives the controller's metrics and readiness (NewMetrics).
	Metrics *Metrics

	// PhaseWatch configures the loop that measures each node's phase times (the
	// remaining-time estimate), notifies and silences (phasewatch.go).
	PhaseWatch PhaseWatch

	// OnLeading, when set, is called with true once this controller holds the Lease,
	// before any loop starts, and with false once every loop has stopped, before the
	// Lease is released. Tests use it to check that leaders never overlap.
	OnLeading func(leading bool)

	// StageParallel is how many nodes of a pool stage a new OS image at once before
	// their drain where the pool does not say (driverOptions.StageParallel).
	StageParallel int
}

func (c *Config) defaults() error {
	if c.Clients == nil {
		return errors.New("controller: no clients")
	}
	if c.Namespace == "" {
		c.Namespace = install.Namespace
	}
	if c.LeaseName == "" {
		c.LeaseName = install.LeaseName
	}
	if c.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("controller: identity for the Lease: %w", err)
		}
		c.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	// The leader election timing is kube.Lead's to default: the controller's is its
	// default (DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod).
	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	if c.Rediscover <= 0 {
		c.Rediscover = DefaultRediscover
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	c.KubeletBase.defaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run refuses to start where MCO runs (ErrMCOPresent), fails when the cluster does not
// serve the MachineConfig APIs, and otherwise runs for election on the Lease until ctx
// ends: while it holds the Lease, it runs the render, rollout and boot image loops.
//
// Run returns nil when ctx ends. When the Lease is lost (its renewal failed), the loops
// stop and Run returns an error: the process should exit and start over, as every
// client-go controller does. On the way out the loops are stopped before the Lease is
// released, so the next leader never overlaps this one.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	found, evidence, err := kube.DetectMCO(ctx, cfg.Clients.Kube)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if found {
		return fmt.Errorf("controller: refusing to start: %s; %w", evidence, ErrMCOPresent)
	}
	if err := requireAPIs(cfg.Clients); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	cfg.Metrics.setState(stateStandby)
	defer cfg.Metrics.setState(stateStopped)
	onLeading := func(leading bool) {
		cfg.Metrics.setLeading(leading)
		if cfg.OnLeading != nil {
			cfg.OnLeading(leading)
		}
	}

	err = kube.Lead(ctx, kube.Election{
		Kube:          cfg.Clients.Kube,
		Namespace:     cfg.Namespace,
		Name:          cfg.LeaseName,
		Identity:      cfg.Identity,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Logger:        cfg.Logger,
		OnLeading:     onLeading,
	}, func(ctx context.Context) error { return lead(ctx, &cfg) })
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}

// requireAPIs fails unless the cluster serves what the render and rollout loops need.
func requireAPIs(c *kube.Clients) error {
	for _, r := range []string{"machineconfigpools", "machineconfigs", "machineconfignodes"} {
		ok, err := kube.Served(c.Kube.Discovery(), mcfgv1.GroupVersion, r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the cluster does not serve %s.%s: its CustomResourceDefinitions are not installed (`mcotui install | kubectl apply -f -` installs them)", r, mcfgv1.GroupName)
		}
	}
	return nil
}

// lead runs the loops for one leadership term, until ctx ends: each loop is set up by
// its own function (its informers, its event filters, its queue), then all start
// together once every cache has synced.
func lead(ctx context.Context, cfg *Config) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Clients.Kube.CoreV1().Events("")})
	t := newTerm(cfg, broadcaster.NewRecorder(eventScheme(), corev1.EventSource{Component: Component}))
	defer t.shutdown()

	if err := t.setupStreams(); err != nil {
		return err
	}
	rd := t.setupRollout()
	t.setupRender()
	t.setupPhaseWatch()
	if err := t.setupBootImages(ctx); err != nil {
		return err
	}
	if err := t.setupGenerate(ctx); err != nil {
		return err
	}
	if err := errors.Join(t.regs...); err != nil {
		return fmt.Errorf("register informer handlers: %w", err)
	}

	t.kubeF.Start(ctx.Done())
	t.mcfgF.Start(ctx.Done())
	for _, f := range t.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), t.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informer caches did not sync")
	}
	t.log.Info("caches synced; loops running")
	cfg.Metrics.observe(t.rollout.pools.Lister(), t.rollout.nodes.Lister(), t.rollout.mcns.Lister())

	var wg sync.WaitGroup
	for _, l := range t.loops {
		wg.Go(func() {
			defer utilruntime.HandleCrashWithContext(ctx)
			l.run(ctx, 1)
		})
	}
	for _, task := range t.tasks {
		wg.Go(func() {
			defer utilruntime.HandleCrashWithContext(ctx)
			task(ctx)
		})
	}
	wg.Wait()
	// The rollout's targets in flight end with ctx: waited for, so that no write of
	// this term lands once the next leader may have started.
	rd.Wait()
	return nil
}

// term is one leadership term's wiring, which the setup functions fill: the shared
// informer factories, the loops and the caches they wait on.
type term struct {
	cfg      *Config
	log      *slog.Logger
	recorder record.EventRecorder
	kubeF    kubeinformers.SharedInformerFactory
	mcfgF    mcfginformers.SharedInformerFactory
	rollout  rolloutInformers
	streams  mcfgv1informers.OSImageStreamInformer // nil where not served
	requeue  *requeuer

	loops     []*loop
	tasks     []func(context.Context) // run beside the loops, for the term
	synced    []cache.InformerSynced
	factories []informerFactory // started with kubeF and mcfgF, shut down before them
	regs      []error
}

type informerFactory interface {
	Start(<-chan struct{})
	Shutdown()
}

func newTerm(cfg *Config, recorder record.EventRecorder) *term {
	t := &term{
		cfg: cfg, log: cfg.Logger, recorder: recorder,
		kubeF: kubeinformers.NewSharedInformerFactory(cfg.Clients.Kube, cfg.Resync),
		mcfgF: mcfginformers.NewSharedInformerFactory(cfg.Clients.MachineConfig, cfg.Resync),
	}
	t.rollout = newRolloutInformers(t.kubeF, t.mcfgF)
	return t
}

// shutdown stops what the term started, the loops' own factories first.
func (t *term) shutdown() {
	for i := len(t.factories) - 1; i >= 0; i-- {
		t.factories[i].Shutdown()
	}
	if t.requeue != nil {
		t.requeue.stop()
	}
	t.mcfgF.Shutdown()
	t.kubeF.Shutdown()
}

func (t *term) register(_ cache.ResourceEventHandlerRegistration, err error) {
	t.regs = append(t.regs, err)
}

// setupRollout sets up the rollout loop: the driver over the shared rollout watch
// (rolloutInformers.watch), requeued by its policy's waits and its failed targets.
func (t *term) setupRollout() *driver {
	cfg := t.cfg
	var rolloutQ *loop
	t.requeue = newRequeuer(cfg.Clock, func(pool string) { rolloutQ.add(pool) })
	opts := driverOptions{
		FieldManager: cfg.Identity, Recorder: t.recorder, Logger: t.log.With("loop", "rollout"), Clock: cfg.Clock,
		Nodes: t.rollout.nodes.Lister(), Pools: t.rollout.pools.Lister(), MachineConfigNodes: t.rollout.mcns.Lister(),
		Alerts: cfg.Alerts, Requeue: t.requeue.after, StatusInterval: DefaultStatusInterval,
		OnTargeted:        func(pool, _ string) { cfg.Metrics.targeted(pool) },
		BackgroundTargets: true,
		Retry:             func(pool string, after time.Duration) { rolloutQ.queue.AddAfter(pool, after) },
		StageParallel:     cfg.StageParallel,
	}
	if t.streams != nil {
		opts.OSImageStreams = t.streams.Lister()
		opts.MachineConfigs = t.mcfgF.Machineconfiguration().V1().MachineConfigs().Lister()
	}
	d := newDriver(cfg.Clients, opts)
	rl := &rolloutLoop{driver: d}
	rolloutQ = newLoop("rollout", rl.sync, t.log, cfg.Metrics.QueueMetrics())
	t.regs = append(t.regs, t.rollout.watch(rolloutQ.add))
	t.loops = append(t.loops, rolloutQ)
	t.synced = append(t.synced, t.rollout.synced()...)
	return d
}

// setupRender sets up the render loop: a pool renders again when its spec, its
// rollback pin or any MachineConfig changes.
func (t *term) setupRender() {
	cfg := t.cfg
	mcs := t.mcfgF.Machineconfiguration().V1().MachineConfigs()
	pools := t.rollout.pools
	rend := &renderLoop{
		clients: cfg.Clients, recorder: t.recorder, clock: cfg.Clock, log: t.log.With("loop", "render"),
		pools: pools.Lister(), mcs: mcs.Lister(), version: cfg.Version, fieldManager: cfg.Identity,
	}
	renderQ := newLoop("render", rend.sync, t.log, cfg.Metrics.QueueMetrics())
	t.register(pools.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.MachineConfigPool) []string {
		if old != nil && !poolChangeMattersToRender(old, cur) {
			return nil
		}
		if old != nil && cur.Name == render.WorkerPool && old.Spec.OSImageStream.Name != cur.Spec.OSImageStream.Name {
			return t.rollout.allPools() // custom pools inherit the worker pool's stream
		}
		return []string{cur.Name}
	}, renderQ.add)))
	t.register(mcs.Informer().AddEventHandler(handler(func(_, _ *mcfgv1.MachineConfig) []string {
		return t.rollout.allPools() // any pool may select it
	}, renderQ.add)))
	if t.streams != nil {
		rend.streams = t.streams.Lister()
		t.register(t.streams.Informer().AddEventHandler(handler(func(old, cur *mcfgv1.OSImageStream) []string {
			if old != nil && equality.Semantic.DeepEqual(old.Status, cur.Status) {
				return nil // pools read only its status, as MCO's render controller
			}
			return t.rollout.allPools()
		}, renderQ.add)))
		t.synced = append(t.synced, t.streams.Informer().HasSynced)
	}
	// The render loop goes first, as it did when the loops were wired inline.
	t.loops = append([]*loop{renderQ}, t.loops...)
	t.synced = append(t.synced, mcs.Informer().HasSynced)
}

// setupStreams makes the OSImageStream informer where the cluster serves
// OSImageStreams (OSStreams; the CRDs of clusters before it do not): the render loop
// renders against the pools' streams, the rollout loop reports each pool's stream.
func (t *term) setupStreams() error {
	ok, err := kube.Served(t.cfg.Clients.Kube.Discovery(), mcfgv1.GroupVersion, "osimagestreams")
	if err != nil {
		return err
	}
	if !ok {
		t.log.Info("OS image streams are not used: the cluster does not serve osimagestreams." + mcfgv1.GroupName)
		return nil
	}
	t.streams = t.mcfgF.Machineconfiguration().V1().OSImageStreams()
	return nil
}

// setupBootImages sets up the boot image loop where the cluster serves Machine API
// MachineSets and MachineConfigurations: one key, synced on every change of
// MachineConfiguration/cluster's spec, a MachineSet, the coreos-bootimages ConfigMap
// or, where Cluster API is installed, a MachineDeployment or machine template
// (watchCAPI).
func (t *term) setupBootImages(ctx context.Context) error {
	cfg, c := t.cfg, t.cfg.Clients
	ok, err := bootImagesServed(c)
	if err != nil {
		return err
	}
	if !ok {
		t.log.Info("boot images are not managed: the cluster serves no Machine API MachineSets or no MachineConfiguration")
		return nil
	}
	opF := operatorinformers.NewSharedInformerFactoryWithOptions(c.Operator, cfg.Resync,
		operatorinformers.WithTweakListOptions(byName(bootimage.MachineConfigurationName)))
	machF := machineinformers.NewSharedInformerFactoryWithOptions(c.Machine, cfg.Resync,
		machineinformers.WithNamespace(bootimage.MachineAPINamespace))
	cmF := kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, cfg.Resync,
		kubeinformers.WithNamespace(bootimage.ConfigMapNamespace),
		kubeinformers.WithTweakListOptions(byName(bootimage.ConfigMapName)))
	t.factories = append(t.factories, opF, machF, cmF)
	mcfgs := opF.Operator().V1().MachineConfigurations()
	machineSets := machF.Machine().V1beta1().MachineSets()
	configMaps := cmF.Core().V1().ConfigMaps()
	bl := &bootImageLoop{
		clients: c, recorder: t.recorder, clock: cfg.Clock, log: t.log.With("loop", "bootimages"),
		platform: cfg.Platform, fieldManager: cfg.Identity,
		configurations: mcfgs.Lister(), machineSets: machineSets.Lister(),
		configMaps: configMaps.Lister(), nodes: t.rollout.nodes.Lister(),
		installVersion: kube.ClusterInstallVersion(c, t.log),
	}
	if c.Dynamic != nil {
		bl.capi = &kube.CAPIBootImages{Dynamic: c.Dynamic, FieldManager: cfg.Identity, Log: bl.log}
	}
	cpmsOK, err := kube.Served(c.Kube.Discovery(), machinev1.GroupVersion, "controlplanemachinesets")
	if err != nil {
		return err
	}
	var cpmss machinev1informers.ControlPlaneMachineSetInformer
	if cpmsOK {
		cpmss = machF.Machine().V1().ControlPlaneMachineSets()
		bl.cpmss = cpmss.Lister()
	}
	bootQ := newLoop("bootimages", bl.sync, t.log, cfg.Metrics.QueueMetrics())
	// One key: every trigger syncs all enrolled MachineSets, as in MCO. The reason of
	// the last trigger becomes the conditions' reason.
	key := func(reason string) []string {
		bl.trigger(reason)
		return []string{bootimage.MachineConfigurationName}
	}
	t.register(mcfgs.Informer().AddEventHandler(handler(func(old, cur *operatorv1.MachineConfiguration) []string {
		if old != nil && old.Generation == cur.Generation {
			return nil // a status write (ours) or a resync
		}
		return key(reasonConfigurationUpdated)
	}, bootQ.add)))
	t.register(machineSets.Informer().AddEventHandler(handler(func(_, _ *machinev1beta1.MachineSet) []string {
		return key(reasonMachineSetUpdated)
	}, bootQ.add)))
	t.register(configMaps.Informer().AddEventHandler(handler(func(_, _ *corev1.ConfigMap) []string {
		return key(reasonBootImagesUpdated)
	}, bootQ.add)))
	if cpmss != nil {
		t.register(cpmss.Informer().AddEventHandler(handler(func(old, cur *machinev1.ControlPlaneMachineSet) []string {
			if old != nil && !cpmsChangeMatters(old, cur) {
				return nil
			}
			return key(reasonCPMSUpdated)
		}, bootQ.add)))
		t.synced = append(t.synced, cpmss.Informer().HasSynced)
	}
	if bl.capi != nil {
		if err := t.watchCAPI(ctx, c, key, bootQ.add); err != nil {
			return err
		}
	}
	t.loops = append(t.loops, bootQ)
	t.synced = append(t.synced, mcfgs.Informer().HasSynced, machineSets.Informer().HasSynced, configMaps.Informer().HasSynced)
	return nil
}

// setupGenerate sets up the loop of KubeletConfigs and ContainerRuntimeConfigs where
// the cluster serves them.
func (t *term) setupGenerate(ctx context.Context) error {
	cfg, c := t.cfg, t.cfg.Clients
	ok, why, err := generateServed(ctx, c)
	if err != nil {
		return err
	}
	if !ok {
		t.log.Info("KubeletConfigs and ContainerRuntimeConfigs are not generated: " + why)
		return nil
	}
	baseOK, err := baseReadable(ctx, c, cfg.KubeletBase)
	if err != nil {
		return err
	}
	if !baseOK {
		t.log.Warn("the controller may not read the base kubelet configuration: KubeletConfigs will fail until it may", "configmap", cfg.KubeletBase.Namespace+"/"+cfg.KubeletBase.Name)
	}
	gl, genRegs, genSynced, cmF := generateInformers(cfg, t.mcfgF, t.rollout.nodes, baseOK)
	t.factories = append(t.factories, cmF)
	genQ := newLoop("generate", gl.sync, t.log, cfg.Metrics.QueueMetrics())
	for _, r := range genRegs {
		t.register(r(genQ.add))
	}
	t.loops = append(t.loops, genQ)
	t.synced = append(t.synced, genSynced...)
	return nil
}

func byName(name string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// cpmsChangeMatters is MCO's updateControlPlaneMachineSet filter: a change of the
// template's providerSpec, the labels, annotations or owner references.
func cpmsChangeMatters(old, cur *machinev1.ControlPlaneMachineSet) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true // a resync
	}
	var po, pc *machinev1beta1.ProviderSpec
	if t := old.Spec.Template.OpenShiftMachineV1Beta1Machine; t != nil {
		po = &t.Spec.ProviderSpec
	}
	if t := cur.Spec.Template.OpenShiftMachineV1Beta1Machine; t != nil {
		pc = &t.Spec.ProviderSpec
	}
	return !equality.Semantic.DeepEqual(po, pc) || !equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) || !equality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences)
}

func bootImagesServed(c *kube.Clients) (bool, error) {
	ms, err := kube.Served(c.Kube.Discovery(), machinev1beta1.GroupVersion, "machinesets")
	if err != nil || !ms {
		return false, err
	}
	return kube.Served(c.Kube.Discovery(), operatorv1.GroupVersion, "machineconfigurations")
}

// eventScheme knows every kind the controller records events on, so that the events'
// involvedObject names the kind.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(mcfgscheme.AddToScheme(s))
	utilruntime.Must(operatorscheme.AddToScheme(s))
	utilruntime.Must(machinescheme.AddToScheme(s))
	return s
}
