package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// TargetNode gives node the rendered config desired, as MCO's node controller does
// (setDesiredMachineConfigAnnotation): it sets the node's desiredConfig annotation, then
// brings the node's MachineConfigNode in step (see SyncMachineConfigNode). pool is the
// node's MachineConfigPool.
//
// node is the version the decision was made on: the annotation patch carries its
// resourceVersion, so a node that changed since (its agent reported, an administrator
// cordoned it) answers 409 Conflict and the caller decides again on fresh data rather
// than targeting a node that may no longer be a candidate. existing is the node's
// MachineConfigNode as the caller's cache has it, or nil (see SyncMachineConfigNode).
// fieldManager names the writer in the node's managedFields.
func TargetNode(ctx context.Context, c *Clients, node *corev1.Node, existing *mcfgv1.MachineConfigNode, pool, desired, fieldManager string) error {
	_, err := TargetNodeWith(ctx, c, Target{Node: node, MachineConfigNode: existing, Pool: pool, Desired: desired, FieldManager: fieldManager})
	return err
}

// Target is one node's target, for TargetNodeWith.
type Target struct {
	// Node is the version the decision was made on (see TargetNode).
	Node *corev1.Node
	// MachineConfigNode is the node's MachineConfigNode as the caller's cache has it,
	// or nil.
	MachineConfigNode *mcfgv1.MachineConfigNode
	Pool, Desired     string
	FieldManager      string
	// SetTaints, when true, makes the target's patch replace the node's taints with
	// Taints too: the driver drops the UpdateInProgress taint of a node it targets in
	// the same write, rather than in a second one.
	SetTaints bool
	Taints    []corev1.Taint
	// NodeOnly leaves the MachineConfigNode to the caller: a driver that patches the
	// node on the critical path and brings the MachineConfigNode in step after it.
	NodeOnly bool
}

// Targeted is what the writes of a target left: the node as the API server answered
// the patch, and the MachineConfigNode written, or nil when it needed no write.
type Targeted struct {
	Node              *corev1.Node
	MachineConfigNode *mcfgv1.MachineConfigNode
}

// TargetNodeWith is TargetNode with the node's taints set in the same patch (when
// t.SetTaints), and it returns what it wrote, for the caller's record of its own writes.
// Targeted.Node is set whenever the node's patch succeeded, even when the
// MachineConfigNode's write then failed.
func TargetNodeWith(ctx context.Context, c *Clients, t Target) (Targeted, error) {
	node, desired := t.Node, t.Desired
	if msgs := validation.IsDNS1123Subdomain(desired); len(msgs) > 0 {
		return Targeted{}, fmt.Errorf("target node %s: rendered config %q: %s", node.Name, desired, strings.Join(msgs, "; "))
	}
	body := map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"annotations":     map[string]string{nodeanno.DesiredConfigKey: desired},
	}}
	if t.SetTaints {
		taints := t.Taints
		if taints == nil {
			taints = []corev1.Taint{} // a merge patch's null would not clear the list
		}
		body["spec"] = map[string]any{"taints": taints}
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return Targeted{}, fmt.Errorf("target node %s: %w", node.Name, err)
	}
	patched, err := c.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: t.FieldManager})
	if err != nil {
		return Targeted{}, fmt.Errorf("target node %s to %s: %w", node.Name, desired, err)
	}
	if t.NodeOnly {
		return Targeted{Node: patched}, nil
	}
	mcn, err := ApplyMachineConfigNode(ctx, c, patched, t.Pool, t.MachineConfigNode, t.FieldManager)
	if err != nil {
		return Targeted{Node: patched}, fmt.Errorf("target node %s to %s: %w", node.Name, desired, err)
	}
	return Targeted{Node: patched, MachineConfigNode: mcn}, nil
}

// SyncMachineConfigNode keeps the MachineConfigNode of node in step with it: named like
// the node and owned by it, spec.pool is pool and spec.configVersion.desired is the
// node's desiredConfig annotation. A missing one is created; one that differs is
// updated. A node without a desiredConfig annotation (never targeted) gets none, since
// the schema requires a desired config.
//
// existing is the MachineConfigNode as the caller's cache has it, or nil when the cache
// has none (or the caller keeps no cache); it is not modified. A cached one that is
// stale (the agent wrote its status since) costs a Conflict, a GET and a second update;
// nil costs a create that the agent's own MachineConfigNode usually refuses, and a GET.
// Only the spec is written: the status is the agent's.
func SyncMachineConfigNode(ctx context.Context, c *Clients, node *corev1.Node, pool string, existing *mcfgv1.MachineConfigNode, fieldManager string) error {
	_, err := ApplyMachineConfigNode(ctx, c, node, pool, existing, fieldManager)
	return err
}

// ApplyMachineConfigNode is SyncMachineConfigNode, and returns the MachineConfigNode
// as the API server answered its write, or nil when it wrote nothing.
func ApplyMachineConfigNode(ctx context.Context, c *Clients, node *corev1.Node, pool string, existing *mcfgv1.MachineConfigNode, fieldManager string) (*mcfgv1.MachineConfigNode, error) {
	desired := nodeanno.Desired(node)
	if desired == "" {
		return nil, nil
	}
	mcns := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	written, err := syncMachineConfigNode(ctx, c, node, pool, desired, existing, fieldManager)
	if !apierrors.IsConflict(err) {
		return written, err
	}
	fresh, gerr := mcns.Get(ctx, node.Name, metav1.GetOptions{})
	if gerr != nil {
		return nil, fmt.Errorf("get MachineConfigNode %s: %w", node.Name, gerr)
	}
	return syncMachineConfigNode(ctx, c, node, pool, desired, fresh, fieldManager)
}

func syncMachineConfigNode(ctx context.Context, c *Clients, node *corev1.Node, pool, desired string, existing *mcfgv1.MachineConfigNode, fieldManager string) (*mcfgv1.MachineConfigNode, error) {
	mcns := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	if existing == nil {
		created, err := mcns.Create(ctx, NewMachineConfigNode(node, pool, desired), metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case err == nil:
			return created, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("create MachineConfigNode %s: %w", node.Name, err)
		}
		// The agent created it first: bring that one in step.
		if existing, err = mcns.Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("get MachineConfigNode %s: %w", node.Name, err)
		}
	}
	if MachineConfigNodeInStep(existing, node.Name, pool, desired) {
		return nil, nil
	}
	mcn := existing.DeepCopy()
	mcn.Spec.Node.Name = node.Name
	mcn.Spec.Pool.Name = pool
	mcn.Spec.ConfigVersion.Desired = desired
	updated, err := mcns.Update(ctx, mcn, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, fmt.Errorf("update MachineConfigNode %s: %w", node.Name, err)
	}
	return updated, nil
}

// MachineConfigNodeInStep reports whether mcn's spec already names node, pool and the
// desired config: SyncMachineConfigNode would write nothing.
func MachineConfigNodeInStep(mcn *mcfgv1.MachineConfigNode, node, pool, desired string) bool {
	return mcn != nil && mcn.Spec.ConfigVersion.Desired == desired && mcn.Spec.Pool.Name == pool && mcn.Spec.Node.Name == node
}

// NewMachineConfigNode is the MachineConfigNode of node in pool, owned by the node, with
// desired as its spec: the one object the agent (on its first report) and the drivers
// (on their first target) create alike.
func NewMachineConfigNode(node *corev1.Node, pool, desired string) *mcfgv1.MachineConfigNode {
	return &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name,
			// Deleting the Node deletes its MachineConfigNode (where a garbage collector runs).
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: node.Name},
			Pool:          mcfgv1.MCOObjectReference{Name: pool},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: desired},
		},
	}
}
