package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui/action"
)

// FieldManager names the TUI's writes in the objects' managedFields.
const FieldManager = "mcotui-tui"

// Actions is action.Actions over a Cluster: typed clients for the writes, the
// Cluster's caches for the reads that decide them. Every write is a patch of the one
// object it names; the patches that were decided on what the cache showed (a boot
// image selection, a node's desired config) carry that object's resourceVersion, so a
// change made meanwhile by someone else is refused with a conflict rather than undone.
type Actions struct {
	c   *Cluster
	who string // who acts, for the log: an SSH user, or "" for the local terminal
	log *slog.Logger
}

// NewActions returns the actions of cluster c. who names the person acting, for the
// log; it may be empty.
func NewActions(c *Cluster, who string) *Actions {
	return &Actions{c: c, who: who, log: c.log.With("user", who)}
}

var _ action.Actions = (*Actions)(nil)

// SetPaused implements action.Actions.
func (a *Actions) SetPaused(ctx context.Context, pool string, paused bool) error {
	if err := kube.SetPoolPaused(ctx, a.c.clients, pool, paused, FieldManager); err != nil {
		return err
	}
	a.log.Info("set spec.paused", "pool", pool, "paused", paused)
	return nil
}

// EvictPod implements action.Actions with a policy/v1 Eviction, as kubectl drain
// evicts.
func (a *Actions) EvictPod(ctx context.Context, namespace, name string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := a.c.clients.Kube.CoreV1().Pods(namespace).EvictV1(ctx, ev); err != nil {
		return fmt.Errorf("evict pod %s/%s: %w", namespace, name, err)
	}
	a.log.Info("evicted a pod", "pod", namespace+"/"+name)
	return nil
}

// DeletePod implements action.Actions.
func (a *Actions) DeletePod(ctx context.Context, namespace, name string) error {
	if err := a.c.clients.Kube.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	a.log.Info("deleted a pod", "pod", namespace+"/"+name)
	return nil
}

// SetMaxUnavailable implements action.Actions with kube.SetMaxUnavailable, which
// checks the value as the rollout reads it before it is written.
func (a *Actions) SetMaxUnavailable(ctx context.Context, pool string, v intstr.IntOrString) error {
	if err := kube.SetMaxUnavailable(ctx, a.c.clients, pool, v, FieldManager); err != nil {
		return err
	}
	a.log.Info("set spec.maxUnavailable", "pool", pool, "maxUnavailable", v.String())
	return nil
}

// Rollout implements action.Actions: one step of rollout.Plan over the pool's members
// as the cache has them, under the pool's rollout policy as the controller reads it
// (rollout.PolicyOptions: maintenance windows, health gates, update order), each target written with kube.TargetNode (the node's
// desiredConfig annotation alone, carrying the resourceVersion the plan saw; the
// node's agent brings its MachineConfigNode in step).
func (a *Actions) Rollout(ctx context.Context, pool string, confirmed []string) (rollout.Step, error) {
	p, err := a.c.pools.Get(pool)
	if err != nil {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: %w", pool, err)
	}
	nodes, err := a.c.members(p)
	if err != nil {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: %w", pool, err)
	}
	opts, hold := a.c.policyOptions(ctx, p, nodes)
	if hold.Invalid {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: %s", pool, hold.Message)
	}
	if opts.Policy.Hooks.Any() {
		// The hooks run where the rollout is driven (the controller's sync, the
		// drive): a step by hand would target nodes their hooks never saw.
		return rollout.Step{}, fmt.Errorf("roll out pool %s: it has hooks (mcotui.io/hook-*), which run only where the rollout is driven: let the controller drive it, or drive it from here; nothing was written", pool)
	}
	step, err := rollout.Plan(p, nodes, opts)
	if err != nil {
		return rollout.Step{}, err
	}
	if len(step.Targets) == 0 && hold.Reason != "" {
		return step, fmt.Errorf("roll out pool %s: no node to target now: %s; nothing was written", pool, hold.Message)
	}
	if !slices.Equal(step.Targets, confirmed) {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: the cluster changed since the step was shown: it now targets %s, not %s; nothing was written, look again",
			pool, names(step.Targets), names(confirmed))
	}
	if len(step.Targets) == 0 {
		return step, fmt.Errorf("roll out pool %s: no node to target now: %s", pool, step.Wait)
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var errs []error
	for _, name := range step.Targets {
		if err := kube.TargetNode(ctx, a.c.clients, byName[name], step.Target, FieldManager); err != nil {
			errs = append(errs, err)
			continue
		}
		a.log.Info("targeted node", "pool", pool, "node", name, "config", step.Target)
	}
	return step, errors.Join(errs...)
}

// RollBack implements action.Actions with kube.RollBackPool, which reads the pool
// afresh, so that a pool whose target moved meanwhile is not pinned to a config the
// user did not see.
func (a *Actions) RollBack(ctx context.Context, pool, to, from string) error {
	if err := kube.RollBackPool(ctx, a.c.clients, pool, to, from, FieldManager); err != nil {
		return err
	}
	a.log.Info("rolled back", "pool", pool, "to", to, "from", from)
	return nil
}

// RollForward implements action.Actions with kube.RollForwardPool.
func (a *Actions) RollForward(ctx context.Context, pool, to string) error {
	if err := kube.RollForwardPool(ctx, a.c.clients, pool, to, FieldManager); err != nil {
		return err
	}
	a.log.Info("removed the rollback pin", "pool", pool, "to", to)
	return nil
}

func names(ns []string) string {
	if len(ns) == 0 {
		return "no node"
	}
	return strings.Join(ns, ", ")
}

// Retry implements action.Actions, for a node rollout.Plan agrees is failing at the
// pool's target: it sets the node's state annotation back to Working and clears its
// reason, on the version of the node that was checked. That move to Working is the
// agent's retry request: it ends the backoff after a failure and the agent tries the
// update again at once (agent.waitRetry), as it would have on its own a little later.
func (a *Actions) Retry(ctx context.Context, pool, node string) error {
	p, err := a.c.pools.Get(pool)
	if err != nil {
		return fmt.Errorf("retry node %s: %w", node, err)
	}
	nodes, err := a.c.members(p)
	if err != nil {
		return fmt.Errorf("retry node %s: %w", node, err)
	}
	opts, hold := a.c.policyOptions(ctx, p, nodes)
	if hold.Invalid {
		return fmt.Errorf("retry node %s: %s", node, hold.Message)
	}
	opts.Retry = []string{node}
	step, err := rollout.Plan(p, nodes, opts)
	if err != nil {
		return err
	}
	if !slices.Contains(step.Retry, node) {
		for _, sk := range step.Skipped {
			if sk.Node == node {
				return fmt.Errorf("retry node %s: %s", node, sk.Message)
			}
		}
		return fmt.Errorf("retry node %s: it is not failing at pool %s's target %s", node, pool, step.Target)
	}
	i := slices.IndexFunc(nodes, func(n *corev1.Node) bool { return n.Name == node })
	if err := kube.RetryNode(ctx, a.c.clients, nodes[i], FieldManager); err != nil {
		return err
	}
	a.log.Info("retry node", "pool", pool, "node", node)
	return nil
}

// SetBootImageMode implements action.Actions with kube.SetBootImageMode, on the
// MachineConfiguration the cache shows: a change made meanwhile is refused.
func (a *Actions) SetBootImageMode(ctx context.Context, sel operatorv1.MachineManagerSelector) error {
	name := bootimage.MachineConfigurationName
	if a.c.mcfg == nil {
		return errors.New("set the boot image mode: the cluster does not serve machineconfigurations.operator.openshift.io")
	}
	cur, err := a.c.mcfg.Get(name)
	if err != nil {
		return fmt.Errorf("set the boot image mode: MachineConfiguration %s: %w", name, err)
	}
	if err := kube.SetBootImageMode(ctx, a.c.clients, sel, cur, FieldManager); err != nil {
		return err
	}
	a.log.Info("set boot image mode", "mode", sel.Mode)
	return nil
}

// policyOptions evaluates the pool's rollout policy now by kube.PolicyOptions, the
// code path of the controller's sync.
func (c *Cluster) policyOptions(ctx context.Context, p *mcfgv1.MachineConfigPool, nodes []*corev1.Node) (rollout.Options, rollout.Hold) {
	in := kube.GateInputs{Clients: c.clients, Alerts: c.alerts, MachineConfigNode: c.machineConfigNode,
		Pools: func() ([]*mcfgv1.MachineConfigPool, error) { return c.pools.List(labels.Everything()) }, Members: c.members}
	return kube.PolicyOptions(ctx, in, p, nodes, c.now())
}

// machineConfigNode is the node's MachineConfigNode from the cache, or nil.
func (c *Cluster) machineConfigNode(name string) *mcfgv1.MachineConfigNode {
	if c.mcns == nil {
		return nil
	}
	m, err := c.mcns.Get(name)
	if err != nil {
		return nil
	}
	return m
}

// members are the pool's nodes as the controller counts them (rollout.Members, MCO's
// precedence between pools), from the caches, in the view the controller plans over
// (rollout.PlanningView: a node mcotui never configured is an idle candidate), so
// that a step the TUI takes is the step the controller would take.
func (c *Cluster) members(p *mcfgv1.MachineConfigPool) ([]*corev1.Node, error) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pools, err := c.pools.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	members, _ := rollout.Members(p, pools, nodes)
	return rollout.PlanningView(members), nil
}
