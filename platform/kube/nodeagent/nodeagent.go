package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
)

const (
	// AgentComponent names the agent to the API server: the source of its Events and
	// its user agent.
	AgentComponent = "mcotui-agent"

	// DefaultDrainRetry is the pause between two drain attempts.
	DefaultDrainRetry = 10 * time.Second
	// DefaultEvictTimeout bounds one drain attempt, as MCO's drain controller does.
	DefaultEvictTimeout = 90 * time.Second

	// maxEvictRetry is the longest pause between two eviction requests for a pod whose
	// eviction was refused: kubectl drain's.
	maxEvictRetry = 5 * time.Second
)

// NodeAgentOptions tune a NodeAgent. The zero value is the production setting.
type NodeAgentOptions struct {
	// Clock gives the time of condition transitions and paces drain retries. Default:
	// the real clock.
	Clock clock.Clock
	// DrainRetry is the pause between drain attempts. The pause between two eviction
	// requests for a pod whose eviction was refused is DrainRetry or 5s (kubectl drain's),
	// whichever is shorter; a cancelled drain returns within it. Default
	// DefaultDrainRetry.
	DrainRetry time.Duration
	// EvictTimeout bounds one drain attempt: evicting every pod and waiting for them to
	// be gone. Default DefaultEvictTimeout.
	EvictTimeout time.Duration
	// Logger receives the agent's cluster-side log: drain progress and retries. Default:
	// discard.
	Logger *slog.Logger
}

// NodeAgent is the on-host agent's access to the cluster, for one node: it satisfies
// the agent's Cluster interface. Its methods may be called concurrently. Close (or the
// end of the context given to NewNodeAgent) stops its informers and its event
// broadcaster.
type NodeAgent struct {
	name    string
	pool    string // as given to NewNodeAgent; "" derives it from the node's roles
	clients *kube.Clients
	clock   clock.Clock
	log     *slog.Logger

	drainRetry   time.Duration
	evictRetry   time.Duration
	evictTimeout time.Duration

	nodes       corelisters.NodeLister
	nodesSynced cache.InformerSynced
	changes     chan struct{}

	kubeInformers kubeinformers.SharedInformerFactory
	mcfgInformers mcfginformers.SharedInformerFactory
	broadcaster   record.EventBroadcaster
	recorder      record.EventRecorder
	nodeRef       *corev1.ObjectReference

	stop      context.CancelFunc
	closeOnce sync.Once
}

// NewNodeAgent connects the agent of node to the cluster cfg points at: it starts
// informers on the Node and on the MachineConfigNode of that name (each watching that
// one object through a metadata.name field selector), waits until both have synced, and
// starts recording Events. pool is the MachineConfigPool the node belongs to, written
// into the MachineConfigNode's spec; when empty it is derived from the node's role
// labels (see SetConditions).
//
// ctx bounds the wait for the informers and the life of the NodeAgent: when ctx ends,
// it stops as if Close had been called. cfg is not modified.
//
// NewNodeAgent fails at once, saying so, when the cluster does not serve the
// MachineConfigNode API (the CRDs are not installed).
func NewNodeAgent(ctx context.Context, cfg *rest.Config, node, pool string, opts NodeAgentOptions) (*NodeAgent, error) {
	if node == "" {
		return nil, errors.New("node agent: the node name is empty")
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = AgentComponent
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("node agent for node %s: %w", node, err)
	}
	if err := requireMachineConfigNodes(clients); err != nil {
		return nil, fmt.Errorf("node agent for node %s: %w", node, err)
	}

	a := &NodeAgent{
		name:         node,
		pool:         pool,
		clients:      clients,
		clock:        opts.Clock,
		log:          opts.Logger,
		drainRetry:   opts.DrainRetry,
		evictTimeout: opts.EvictTimeout,
		changes:      make(chan struct{}, 1),
		// kubectl describe node finds a node's events by a UID equal to its name, the
		// kubelet's convention.
		nodeRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(node)},
	}
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("node", node)
	if a.drainRetry <= 0 {
		a.drainRetry = DefaultDrainRetry
	}
	if a.evictTimeout <= 0 {
		a.evictTimeout = DefaultEvictTimeout
	}
	// kubectl drain's own pause between refused evictions, or less. The helper sleeps it
	// without watching its context, so it also bounds how late a cancelled drain returns.
	a.evictRetry = min(a.drainRetry, maxEvictRetry)

	runCtx, stop := context.WithCancel(ctx)
	a.stop = stop

	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", node).String()
	}
	a.kubeInformers = kubeinformers.NewSharedInformerFactoryWithOptions(clients.Kube, 0, kubeinformers.WithTweakListOptions(byName))
	a.mcfgInformers = mcfginformers.NewSharedInformerFactoryWithOptions(clients.MachineConfig, 0, mcfginformers.WithTweakListOptions(byName))
	nodeInformer := a.kubeInformers.Core().V1().Nodes()
	mcnInformer := a.mcfgInformers.Machineconfiguration().V1().MachineConfigNodes()
	a.nodes = nodeInformer.Lister()
	a.nodesSynced = nodeInformer.Informer().HasSynced
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { a.notify() },
		UpdateFunc: func(oldObj, newObj any) {
			o, oerr := objectMeta(oldObj)
			n, nerr := objectMeta(newObj)
			if oerr == nil && nerr == nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync, not a change
			}
			a.notify()
		},
		DeleteFunc: func(any) { a.notify() },
	}
	if _, err := nodeInformer.Informer().AddEventHandler(notify); err != nil {
		stop()
		return nil, fmt.Errorf("node agent for node %s: watch the node: %w", node, err)
	}
	if _, err := mcnInformer.Informer().AddEventHandler(notify); err != nil {
		stop()
		return nil, fmt.Errorf("node agent for node %s: watch its MachineConfigNode: %w", node, err)
	}

	a.broadcaster = record.NewBroadcaster(record.WithContext(runCtx), record.WithCorrelatorOptions(eventCorrelatorOptions()))
	a.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.Kube.CoreV1().Events("")})
	a.recorder = a.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: AgentComponent, Host: node})

	a.kubeInformers.Start(runCtx.Done())
	a.mcfgInformers.Start(runCtx.Done())
	if !cache.WaitForCacheSync(runCtx.Done(), nodeInformer.Informer().HasSynced, mcnInformer.Informer().HasSynced) {
		a.Close()
		return nil, fmt.Errorf("node agent for node %s: wait for the Node and MachineConfigNode informers to sync: %w", node, context.Cause(runCtx))
	}
	return a, nil
}

// requireMachineConfigNodes fails unless the cluster serves the MachineConfigNode
// resource: an informer on a resource that is not served would retry, and
// WaitForCacheSync wait, forever.
func requireMachineConfigNodes(c *kube.Clients) error {
	gv := mcfgv1.GroupVersion.String()
	list, err := c.MachineConfig.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discover the %s API: %w", gv, err)
	}
	if list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "machineconfignodes" }) {
		return nil
	}
	return fmt.Errorf("the cluster does not serve machineconfignodes.%s: its CustomResourceDefinitions are not installed (`mcotui install` applies them)", gv)
}

func objectMeta(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

func (a *NodeAgent) notify() {
	select {
	case a.changes <- struct{}{}:
	default: // a change is already pending; the receiver reads the latest state anyway
	}
}

// Close stops the informers and the event broadcaster and waits for the informers'
// goroutines to end. Events not yet sent are dropped. Close may be called more than once.
func (a *NodeAgent) Close() {
	a.closeOnce.Do(func() {
		a.stop()
		a.kubeInformers.Shutdown()
		a.mcfgInformers.Shutdown()
		a.broadcaster.Shutdown()
	})
}

// Name is the name of the agent's node.
func (a *NodeAgent) Name() string { return a.name }

// Node returns the node from the informer cache, or from the API server while the cache
// has not synced. The cache can lag the agent's own writes by moments; Changes fires
// when it catches up. The result is the caller's to modify.
func (a *NodeAgent) Node(ctx context.Context) (*corev1.Node, error) {
	if !a.nodesSynced() {
		return a.getNode(ctx)
	}
	n, err := a.nodes.Get(a.name)
	if err != nil {
		return nil, fmt.Errorf("node %s from the informer cache: %w", a.name, err)
	}
	return n.DeepCopy(), nil
}

// getNode reads the node from the API server.
func (a *NodeAgent) getNode(ctx context.Context) (*corev1.Node, error) {
	n, err := a.clients.Kube.CoreV1().Nodes().Get(ctx, a.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", a.name, err)
	}
	return n, nil
}

// Changes receives a value after any change to the node or to its MachineConfigNode
// (creation, update or deletion). Changes are coalesced: one value may stand for many,
// so the receiver reads the current state rather than expecting one value per change.
func (a *NodeAgent) Changes() <-chan struct{} { return a.changes }

// MachineConfig reads the MachineConfig name from the API server.
func (a *NodeAgent) MachineConfig(ctx context.Context, name string) (*mcfgv1.MachineConfig, error) {
	mc, err := a.clients.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get MachineConfig %s: %w", name, err)
	}
	return mc, nil
}

// Pools lists the MachineConfigPools from the API server.
func (a *NodeAgent) Pools(ctx context.Context) ([]*mcfgv1.MachineConfigPool, error) {
	list, err := a.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list MachineConfigPools for node %s: %w", a.name, err)
	}
	pools := make([]*mcfgv1.MachineConfigPool, len(list.Items))
	for i := range list.Items {
		pools[i] = &list.Items[i]
	}
	return pools, nil
}

// DisruptionPolicy is the node disruption policy the agent applies: MCO's defaults with
// spec.nodeDisruptionPolicy of MachineConfiguration "cluster" laid over them
// (disruption.Merge). Without that object, or without its CustomResourceDefinition
// (the API server answers 404 Not Found to both), it is the defaults alone.
func (a *NodeAgent) DisruptionPolicy(ctx context.Context) (disruption.Policy, error) {
	mc, err := a.clients.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return disruption.DefaultPolicy(), nil
	case err != nil:
		return disruption.Policy{}, fmt.Errorf("get MachineConfiguration %s: %w", bootimage.MachineConfigurationName, err)
	}
	return disruption.Merge(disruption.DefaultPolicy(), mc.Spec.NodeDisruptionPolicy), nil
}

// Annotate sets the node's annotations in one merge patch; an empty value removes the
// annotation. Other annotations are left alone.
func (a *NodeAgent) Annotate(ctx context.Context, annotations map[string]string) error {
	if len(annotations) == 0 {
		return nil
	}
	anns := make(map[string]any, len(annotations))
	for k, v := range annotations {
		if v == "" {
			anns[k] = nil // JSON null deletes the key
		} else {
			anns[k] = v
		}
	}
	if err := a.patchNode(ctx, map[string]any{"annotations": anns}, nil); err != nil {
		return fmt.Errorf("annotate node %s: %w", a.name, err)
	}
	return nil
}

// Cordon makes the node unschedulable and records, in the same patch, that the agent did
// (nodeanno.CordonedByKey). A node that is already unschedulable is left as it is: if the
// agent cordoned it, there is nothing to do; if someone else did, it stays theirs, without
// the agent's mark, so Uncordon will not undo their cordon.
func (a *NodeAgent) Cordon(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.getNode(ctx)
		if err != nil {
			return err
		}
		if n.Spec.Unschedulable {
			return nil
		}
		return a.patchNode(ctx,
			map[string]any{
				"resourceVersion": n.ResourceVersion, // decided on this version; 409 if it moved
				"annotations":     map[string]any{nodeanno.CordonedByKey: nodeanno.CordonedByAgent},
			},
			map[string]any{"unschedulable": true})
	})
	if err != nil {
		return fmt.Errorf("cordon node %s: %w", a.name, err)
	}
	return nil
}

// Uncordon makes the node schedulable and removes the agent's mark in one patch, only
// if the mark says the agent cordoned it. A node cordoned by someone else stays cordoned.
func (a *NodeAgent) Uncordon(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.getNode(ctx)
		if err != nil {
			return err
		}
		if nodeanno.CordonedBy(n) != nodeanno.CordonedByAgent {
			return nil
		}
		return a.patchNode(ctx,
			map[string]any{
				"resourceVersion": n.ResourceVersion,
				"annotations":     map[string]any{nodeanno.CordonedByKey: nil},
			},
			map[string]any{"unschedulable": false})
	})
	if err != nil {
		return fmt.Errorf("uncordon node %s: %w", a.name, err)
	}
	return nil
}

// patchNode sends a JSON merge patch of the node's metadata and, when not nil, spec.
func (a *NodeAgent) patchNode(ctx context.Context, metadata, spec map[string]any) error {
	p := map[string]any{"metadata": metadata}
	if spec != nil {
		p["spec"] = spec
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = a.clients.Kube.CoreV1().Nodes().Patch(ctx, a.name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// eventCorrelatorOptions are the agent's event recorder's: client-go's defaults but for
// its spam filter, which by default lets a source burst 25 events about an object and
// then one every 5 minutes, whatever their reason. One update writes about 12 Events on
// its node (cordon, drain, apply, reboot, uncordon, ...), so after two updates with a
// retry a node's Events would stop telling what happens to it, when an operator needs
// them most. Here each reason has its own budget (25, then one every 10 seconds): a
// drain retried every few seconds is still held back, an update's steps never are.
func eventCorrelatorOptions() record.CorrelatorOptions {
	return record.CorrelatorOptions{
		QPS: 1. / 10,
		SpamKeyFunc: func(e *corev1.Event) string {
			return strings.Join([]string{e.Source.Component, e.Source.Host, e.InvolvedObject.Kind, e.InvolvedObject.Namespace,
				e.InvolvedObject.Name, string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion, e.Type, e.Reason}, "\x00")
		},
	}
}

// Event records an Event on the node, from component AgentComponent. eventType is
// corev1.EventTypeNormal or corev1.EventTypeWarning; reason is a CamelCase word. Events
// are sent in the background and are best effort: one that cannot be sent is logged by
// client-go and dropped.
func (a *NodeAgent) Event(eventType, reason, message string) {
	a.recorder.Event(a.nodeRef, eventType, reason, message)
}
