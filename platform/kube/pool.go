package kube

import (
	"context"
	"encoding/json"
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

// The cluster writes that the CLI and the TUI share. Each patches the one object it
// names and says in its error which object it could not write. fieldManager names the
// writer in the object's managedFields.

func patchPoolSpec(ctx context.Context, c *Clients, pool string, spec map[string]any, fieldManager string) error {
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, pool,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// SetPoolPaused pauses (MCO's spec.paused: no node gets a new target) or resumes pool.
func SetPoolPaused(ctx context.Context, c *Clients, pool string, paused bool, fieldManager string) error {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	if err := patchPoolSpec(ctx, c, pool, map[string]any{"paused": paused}, fieldManager); err != nil {
		return fmt.Errorf("%s MachineConfigPool %s: %w", verb, pool, err)
	}
	return nil
}

// SetMaxUnavailable sets pool's spec.maxUnavailable to v. The value is checked as the
// rollout reads it before it is written, so that a value the rollout would refuse never
// reaches the pool.
func SetMaxUnavailable(ctx context.Context, c *Clients, pool string, v intstr.IntOrString, fieldManager string) error {
	if _, err := rollout.CheckMaxUnavailable(pool, v, 1); err != nil {
		return err
	}
	if err := patchPoolSpec(ctx, c, pool, map[string]any{"maxUnavailable": v}, fieldManager); err != nil {
		return fmt.Errorf("set maxUnavailable of MachineConfigPool %s to %s: %w", pool, v.String(), err)
	}
	return nil
}

// RollBackPool pins pool to the rendered config to, which replaces from as its target
// (the rollback annotations and spec.configuration.name). The pool is read afresh and
// written with the version read, so that a pool whose target moved meanwhile is not
// pinned to a config the caller did not see.
func RollBackPool(ctx context.Context, c *Clients, pool, to, from, fieldManager string) error {
	pools := c.MachineConfig.MachineconfigurationV1().MachineConfigPools()
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
	if _, err := pools.Update(ctx, p, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("roll back pool %s: the pool changed while it was written; look again and retry", pool)
		}
		return fmt.Errorf("roll back pool %s: %w", pool, err)
	}
	return nil
}

// RollForwardPool removes pool's rollback pin to the rendered config to (the rollback
// annotations RollBackPool wrote), so that mcotui's controller renders the pool's
// MachineConfigs again and rolls forward. spec.configuration is left as it is: the
// render moves it. The pool is read afresh and written with the version read; a pool
// pinned to another config, or not pinned, is left alone and the error says so.
func RollForwardPool(ctx context.Context, c *Clients, pool, to, fieldManager string) error {
	pools := c.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("remove the rollback pin of pool %s: %w", pool, err)
	}
	switch pinned := p.Annotations[rollout.RollbackToAnnotation]; {
	case pinned == "":
		return fmt.Errorf("remove the rollback pin of pool %s: it is not pinned any more; nothing was written", pool)
	case pinned != to:
		return fmt.Errorf("remove the rollback pin of pool %s: it is pinned to %s now, not %s; nothing was written, look again", pool, pinned, to)
	}
	delete(p.Annotations, rollout.RollbackToAnnotation)
	delete(p.Annotations, rollout.RollbackFromAnnotation)
	if _, err := pools.Update(ctx, p, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("remove the rollback pin of pool %s: the pool changed while it was written; look again and retry", pool)
		}
		return fmt.Errorf("remove the rollback pin of pool %s: %w", pool, err)
	}
	return nil
}

// RetryNode asks node's agent to retry its failed update at once: it sets the node's
// state annotation back to Working and clears its reason, on the version of the node
// the caller checked (a node changed since answers 409 Conflict). That move to Working
// ends the agent's backoff after a failure (agent.waitRetry).
func RetryNode(ctx context.Context, c *Clients, node *corev1.Node, fieldManager string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"annotations":     map[string]any{nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: ""},
	}})
	if err != nil {
		return err
	}
	if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("retry node %s: %w", node.Name, err)
	}
	return nil
}

// SetBootImageMode selects the Machine API MachineSets whose boot images are managed
// (bootimage.WithMachineSetSelection), keeping every other machine manager.
//
// shown is the MachineConfiguration the caller decided on, or nil. With it, the patch
// carries its resourceVersion, so a change made meanwhile is refused rather than undone.
// Without it, the current one is read and updated (retried on conflict), and created
// when the cluster has none.
func SetBootImageMode(ctx context.Context, c *Clients, sel operatorv1.MachineManagerSelector, shown *operatorv1.MachineConfiguration, fieldManager string) error {
	name := bootimage.MachineConfigurationName
	mcs := c.Operator.OperatorV1().MachineConfigurations()
	if shown != nil {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": shown.ResourceVersion},
			"spec": map[string]any{"managedBootImages": map[string]any{
				"machineManagers": bootimage.WithMachineSetSelection(shown.Spec.ManagedBootImages.MachineManagers, sel),
			}},
		})
		if err != nil {
			return err
		}
		_, err = mcs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) {
			return fmt.Errorf("set the boot image mode: MachineConfiguration %s changed since it was shown; look again and retry", name)
		}
		if err != nil {
			return fmt.Errorf("set the boot image mode in MachineConfiguration %s: %w", name, err)
		}
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := mcs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = mcs.Create(ctx, &operatorv1.MachineConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: operatorv1.MachineConfigurationSpec{
					StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
					ManagedBootImages:     operatorv1.ManagedBootImages{MachineManagers: bootimage.WithMachineSetSelection(nil, sel)},
					// The schema requires the SSH key actions; None is MCO's default.
					NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
						Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}},
					}},
				},
			}, metav1.CreateOptions{FieldManager: fieldManager})
			return err
		}
		if err != nil {
			return err
		}
		cfg.Spec.ManagedBootImages.MachineManagers = bootimage.WithMachineSetSelection(cfg.Spec.ManagedBootImages.MachineManagers, sel)
		_, err = mcs.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("set the boot image mode in MachineConfiguration %s: %w", name, err)
	}
	return nil
}
