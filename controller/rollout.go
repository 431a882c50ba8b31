package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// FieldManager names mcotui's controller in managedFields, and is the default field
// manager of a Driver.
const FieldManager = "mcotui-controller"

// Event reasons of the rollout loop besides rollout.EventReason (SetDesiredConfig).
const (
	reasonPoolMembership    = "NodeInSeveralPools"
	reasonInvalidRollout    = "InvalidRollout"
	reasonMachineConfigNode = "MachineConfigNodeSyncFailed"
)

// DriverOptions tune a Driver. The zero value is usable.
type DriverOptions struct {
	// FieldManager names the writer in the nodes' and MachineConfigNodes' managedFields.
	// Default FieldManager; the TUI passes its own so that a node's history says who
	// drove it.
	FieldManager string
	// Recorder receives the SetDesiredConfig event of each step on the pool. nil sends
	// no events.
	Recorder record.EventRecorder
	// Logger receives a line per targeted node. Default: discard.
	Logger *slog.Logger
	// MachineConfigNodes, when set, is the cache the targets' MachineConfigNodes are
	// updated from, saving the create and GET each target otherwise costs (see
	// kube.SyncMachineConfigNode). Nodes and pools are always read from the API server.
	MachineConfigNodes mcfglisters.MachineConfigNodeLister
}

// Driver drives pools' rollouts one step at a time, as MCO's node controller does. It
// reads from the API server and keeps no state, so the controller's rollout loop and
// the TUI (when no controller holds the Lease) drive pools the same way. Only one
// driver may drive a pool at a time; Run's Lease sees to that for controllers. Its
// methods may be called concurrently.
type Driver struct {
	clients      *kube.Clients
	mcns         mcfglisters.MachineConfigNodeLister
	fieldManager string
	recorder     record.EventRecorder
	log          *slog.Logger
}

// NewDriver returns a Driver writing through clients.
func NewDriver(clients *kube.Clients, opts DriverOptions) *Driver {
	d := &Driver{clients: clients, mcns: opts.MachineConfigNodes, fieldManager: opts.FieldManager, recorder: opts.Recorder, log: opts.Logger}
	if d.fieldManager == "" {
		d.fieldManager = FieldManager
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d
}

// PoolState is a pool and its member nodes.
type PoolState struct {
	Pool *mcfgv1.MachineConfigPool
	// Nodes are the pool's members (see rollout.Members), by name.
	Nodes []*corev1.Node
	// Problems are nodes the pool selects that belong to no pool (see rollout.PoolFor).
	Problems []error
}

// Read reads the pool named pool and its members from the API server (not from a
// cache): what Step decides on.
func (d *Driver) Read(ctx context.Context, pool string) (PoolState, error) {
	p, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return PoolState{}, fmt.Errorf("get machineconfigpool %s: %w", pool, err)
	}
	poolList, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return PoolState{}, fmt.Errorf("list machineconfigpools: %w", err)
	}
	pools := make([]*mcfgv1.MachineConfigPool, len(poolList.Items))
	for i := range poolList.Items {
		pools[i] = &poolList.Items[i]
	}
	// Only the nodes the pool's selector matches can be members (rollout.Selects): on
	// a large cluster, the rest need not cross the wire at every step.
	var nodes []*corev1.Node
	if sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err == nil && p.Spec.NodeSelector != nil && !sel.Empty() {
		nodeList, err := d.clients.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return PoolState{}, fmt.Errorf("list nodes for machineconfigpool %s: %w", pool, err)
		}
		nodes = make([]*corev1.Node, len(nodeList.Items))
		for i := range nodeList.Items {
			nodes[i] = &nodeList.Items[i]
		}
	}
	members, problems := rollout.Members(p, pools, nodes)
	return PoolState{Pool: p, Nodes: members, Problems: problems}, nil
}

// Step plans the next step of the pool's rollout over its members as the API server
// has them now (rollout.Plan over rollout.PlanningView) and carries it out: each target node's
// desiredConfig annotation is set to the step's target, decided on the node's
// resourceVersion, and its MachineConfigNode is brought in step; then a SetDesiredConfig
// event goes to the pool. A paused pool gets no targets.
//
// The step is returned even when writing a target fails part way; the error names the
// node. A node that changed since it was read fails with a Conflict: step again. The
// retries of opts.Retry are planned but not written: how an agent is told to retry is
// not settled yet.
func (d *Driver) Step(ctx context.Context, pool string, opts rollout.Options) (rollout.Step, error) {
	st, err := d.Read(ctx, pool)
	if err != nil {
		return rollout.Step{}, err
	}
	return d.stepOn(ctx, st, opts)
}

// stepOn is Step on a state the caller read with Read and has not written since.
func (d *Driver) stepOn(ctx context.Context, st PoolState, opts rollout.Options) (rollout.Step, error) {
	step, err := rollout.Plan(st.Pool, rollout.PlanningView(st.Nodes), opts)
	if err != nil {
		return rollout.Step{}, err
	}
	if len(step.Targets) == 0 {
		return step, nil
	}
	byName := make(map[string]*corev1.Node, len(st.Nodes))
	for _, n := range st.Nodes {
		byName[n.Name] = n
	}
	for i, name := range step.Targets {
		if err := kube.TargetNode(ctx, d.clients, byName[name], d.cachedMachineConfigNode(name), st.Pool.Name, step.Target, d.fieldManager); err != nil {
			if i > 0 {
				d.event(st.Pool, rollout.Step{Target: step.Target, Targets: step.Targets[:i]})
			}
			return step, fmt.Errorf("machineconfigpool %s: %w", st.Pool.Name, err)
		}
		d.log.Info("targeted node", "pool", st.Pool.Name, "node", name, "config", step.Target)
	}
	d.event(st.Pool, step)
	return step, nil
}

// cachedMachineConfigNode is the node's MachineConfigNode from the cache, or nil.
func (d *Driver) cachedMachineConfigNode(name string) *mcfgv1.MachineConfigNode {
	if d.mcns == nil {
		return nil
	}
	mcn, err := d.mcns.Get(name)
	if err != nil {
		return nil
	}
	return mcn
}

func (d *Driver) event(pool *mcfgv1.MachineConfigPool, step rollout.Step) {
	if d.recorder != nil && len(step.Targets) > 0 {
		d.recorder.Event(pool, corev1.EventTypeNormal, rollout.EventReason, step.EventMessage())
	}
}

// rolloutLoop is the controller's rollout: per pool, it keeps the MachineConfigNodes in
// step, lets the Driver take a step when the cache says there is one to take, and
// writes the pool's status.
type rolloutLoop struct {
	clients  *kube.Clients
	driver   *Driver
	pools    mcfglisters.MachineConfigPoolLister
	nodes    corelisters.NodeLister
	mcns     mcfglisters.MachineConfigNodeLister
	recorder record.EventRecorder
	clock    clock.PassiveClock
	log      *slog.Logger
}

func (l *rolloutLoop) sync(ctx context.Context, name string) error {
	pool, err := l.pools.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pools, err := l.pools.List(labels.Everything())
	if err != nil {
		return err
	}
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	members, problems := rollout.Members(pool, pools, nodes)
	for _, p := range problems {
		l.recorder.Event(pool, corev1.EventTypeWarning, reasonPoolMembership, p.Error())
	}

	var errs []error
	for _, n := range members {
		mcn, err := l.mcns.Get(n.Name)
		if apierrors.IsNotFound(err) {
			mcn, err = nil, nil
		}
		if err != nil {
			return err
		}
		if err := kube.SyncMachineConfigNode(ctx, l.clients, n, pool.Name, mcn, l.driver.fieldManager); err != nil {
			l.recorder.Event(pool, corev1.EventTypeWarning, reasonMachineConfigNode, err.Error())
			errs = append(errs, err)
		}
	}

	if pool.Spec.Configuration.Name == "" {
		// Not rendered yet: the render loop says why in RenderDegraded.
		return errors.Join(errs...)
	}
	if _, err := l.driver.syncTaints(ctx, pool, members); err != nil {
		errs = append(errs, err)
	}
	view := rollout.PlanningView(members)
	step, err := rollout.Plan(pool, view, rollout.Options{})
	switch {
	case err != nil:
		l.recorder.Event(pool, corev1.EventTypeWarning, reasonInvalidRollout, err.Error())
	case len(step.Targets) > 0:
		// The cache may lag the driver's own last writes; the driver decides again on
		// what the API server has now.
		if _, err := l.driver.Step(ctx, pool.Name, rollout.Options{}); err != nil {
			errs = append(errs, err)
		}
	}

	if err := l.driver.writeStatus(ctx, pool, view, l.clock.Now()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeStatus writes the pool's status as rollout.Status computes it over view, when
// it differs from what the pool has.
func (d *Driver) writeStatus(ctx context.Context, pool *mcfgv1.MachineConfigPool, view []*corev1.Node, now time.Time) error {
	status := rollout.Status(pool, view, metav1.NewTime(now))
	d.setPinnedSynchronizer(pool, &status, view)
	if equality.Semantic.DeepEqual(status, pool.Status) {
		return nil
	}
	updated := pool.DeepCopy()
	updated.Status = status
	if _, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: d.fieldManager}); err != nil {
		return fmt.Errorf("update status of machineconfigpool %s: %w", pool.Name, err)
	}
	return nil
}

// syncTaints keeps the UpdateInProgress taint on the pool's members whose desired
// config differs from the pool's target, and off the others (rollout.UpdateTaints),
// as MCO's node controller does. Each write carries the resourceVersion of the node it
// was decided on, so that it never undoes a taint someone else wrote meanwhile.
//
// wrote says whether any node was written, and so whether members is out of date.
func (d *Driver) syncTaints(ctx context.Context, pool *mcfgv1.MachineConfigPool, members []*corev1.Node) (wrote bool, err error) {
	var errs []error
	for _, n := range members {
		taints, changed := rollout.UpdateTaints(pool, n)
		if !changed {
			continue
		}
		if taints == nil {
			taints = []corev1.Taint{}
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("machineconfigpool %s: taints of node %s: %w", pool.Name, n.Name, err))
			continue
		}
		wrote = true // a failed patch may have been applied all the same
		if _, err := d.clients.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: d.fieldManager}); err != nil {
			errs = append(errs, fmt.Errorf("machineconfigpool %s: set the %s taint of node %s: %w", pool.Name, rollout.UpdateInProgressTaintKey, n.Name, err))
			continue
		}
		d.log.Info("updated taints", "pool", pool.Name, "node", n.Name, "updateInProgress", nodeanno.Desired(n) != pool.Spec.Configuration.Name)
	}
	return wrote, errors.Join(errs...)
}
