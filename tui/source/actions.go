package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
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

func (a *Actions) patchPool(ctx context.Context, pool string, spec map[string]any) error {
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = a.c.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, pool,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// SetPaused implements action.Actions.
func (a *Actions) SetPaused(ctx context.Context, pool string, paused bool) error {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	if err := a.patchPool(ctx, pool, map[string]any{"paused": paused}); err != nil {
		return fmt.Errorf("%s MachineConfigPool %s: %w", verb, pool, err)
	}
	a.log.Info("set spec.paused", "pool", pool, "paused", paused)
	return nil
}

// SetMaxUnavailable implements action.Actions. The value is checked as the rollout
// reads it before it is written, so that a value the rollout would refuse never reaches
// the pool.
func (a *Actions) SetMaxUnavailable(ctx context.Context, pool string, v intstr.IntOrString) error {
	check := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: mcfgv1.MachineConfigPoolSpec{MaxUnavailable: &v}}
	if _, err := rollout.MaxUnavailable(check, 1); err != nil {
		return err
	}
	if err := a.patchPool(ctx, pool, map[string]any{"maxUnavailable": v}); err != nil {
		return fmt.Errorf("set maxUnavailable of MachineConfigPool %s to %s: %w", pool, v.String(), err)
	}
	a.log.Info("set spec.maxUnavailable", "pool", pool, "maxUnavailable", v.String())
	return nil
}

// Rollout implements action.Actions: one step of rollout.Plan over the pool's members
// as the cache has them, each target written with kube.TargetNode (the node's
// desiredConfig annotation, carrying the resourceVersion the plan saw, then its
// MachineConfigNode).
func (a *Actions) Rollout(ctx context.Context, pool string, confirmed []string) (rollout.Step, error) {
	p, err := a.c.pools.Get(pool)
	if err != nil {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: %w", pool, err)
	}
	nodes, err := a.c.members(p)
	if err != nil {
		return rollout.Step{}, fmt.Errorf("roll out pool %s: %w", pool, err)
	}
	step, err := rollout.Plan(p, nodes, rollout.Options{})
	if err != nil {
		return rollout.Step{}, err
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
		if err := kube.TargetNode(ctx, a.c.clients, byName[name], nil, pool, step.Target, FieldManager); err != nil {
			errs = append(errs, err)
			continue
		}
		a.log.Info("targeted node", "pool", pool, "node", name, "config", step.Target)
	}
	return step, errors.Join(errs...)
}

// RollBack implements action.Actions. The pool is read afresh and written with the
// version read, so that a pool whose target moved meanwhile is not pinned to a config
// the user did not see.
func (a *Actions) RollBack(ctx context.Context, pool, to, from string) error {
	pools := a.c.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("roll back pool %s: %w", pool, err)
	}
	if cur := p.Spec.Configuration.Name; cur != from {
		return fmt.Errorf("roll back pool %s: its target is now %s, not %s; nothing was written, look again", pool, cur, from)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[rollout.RollbackToAnnotation] = to
	p.Annotations[rollout.RollbackFromAnnotation] = from
	p.Spec.Configuration.Name = to
	if _, err := pools.Update(ctx, p, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("roll back pool %s: the pool changed while it was written; look again and retry", pool)
		}
		return fmt.Errorf("roll back pool %s: %w", pool, err)
	}
	a.log.Info("rolled back", "pool", pool, "to", to, "from", from)
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
	step, err := rollout.Plan(p, nodes, rollout.Options{Retry: []string{node}})
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
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": nodes[i].ResourceVersion,
		"annotations":     map[string]any{nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: ""},
	}})
	if err != nil {
		return err
	}
	if _, err := a.c.clients.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("retry node %s: %w", node, err)
	}
	a.log.Info("retry node", "pool", pool, "node", node)
	return nil
}

// SetBootImageMode implements action.Actions: it replaces the Machine API MachineSets
// entry of spec.managedBootImages.machineManagers (adding it when there is none) and
// keeps every other machine manager as it is.
func (a *Actions) SetBootImageMode(ctx context.Context, sel operatorv1.MachineManagerSelector) error {
	name := bootimage.MachineConfigurationName
	if a.c.mcfg == nil {
		return errors.New("set the boot image mode: the cluster does not serve machineconfigurations.operator.openshift.io")
	}
	cur, err := a.c.mcfg.Get(name)
	if err != nil {
		return fmt.Errorf("set the boot image mode: MachineConfiguration %s: %w", name, err)
	}
	managers := slices.Clone(cur.Spec.ManagedBootImages.MachineManagers)
	entry := operatorv1.MachineManager{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: sel}
	if i := slices.IndexFunc(managers, func(m operatorv1.MachineManager) bool {
		return m.Resource == operatorv1.MachineSets && m.APIGroup == operatorv1.MachineAPI
	}); i >= 0 {
		managers[i] = entry
	} else {
		managers = append(managers, entry)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cur.ResourceVersion},
		"spec":     map[string]any{"managedBootImages": map[string]any{"machineManagers": managers}},
	})
	if err != nil {
		return err
	}
	_, err = a.c.clients.Operator.OperatorV1().MachineConfigurations().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("set the boot image mode: MachineConfiguration %s changed since it was shown; look again and retry", name)
	}
	if err != nil {
		return fmt.Errorf("set the boot image mode in MachineConfiguration %s: %w", name, err)
	}
	a.log.Info("set boot image mode", "mode", sel.Mode)
	return nil
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
