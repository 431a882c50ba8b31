package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// TargetNode gives node the rendered config desired, as MCO's node controller does
// (setDesiredAnnotations): it sets the node's desiredConfig annotation, and nothing
// else. The node's MachineConfigNode is its agent's to write, spec and status: MCO's
// daemon brings spec.configVersion.desired in step when it takes the update up
// (upgrademonitor.GenerateAndApplyMachineConfigNodeSpec, called from its update), and
// so does mcotui's agent on its first report; a node's phase is read against its
// annotations first (rollout.NodePhase, the TUI), so nothing waits on it.
//
// node is the version the decision was made on: the annotation patch carries its
// resourceVersion, so a node that changed since (its agent reported, an administrator
// cordoned it) answers 409 Conflict and the caller decides again on fresh data rather
// than targeting a node that may no longer be a candidate. fieldManager names the
// writer in the node's managedFields.
func TargetNode(ctx context.Context, c *Clients, node *corev1.Node, desired, fieldManager string) error {
	_, err := TargetNodeWith(ctx, c, Target{Node: node, Desired: desired, FieldManager: fieldManager})
	return err
}

// Target is one node's target, for TargetNodeWith.
type Target struct {
	// Node is the version the decision was made on (see TargetNode).
	Node         *corev1.Node
	Desired      string
	FieldManager string
	// SetTaints, when true, makes the target's patch replace the node's taints with
	// Taints too: the driver drops the UpdateInProgress taint of a node it targets in
	// the same write, rather than in a second one.
	SetTaints bool
	Taints    []corev1.Taint
}

// TargetNodeWith is TargetNode with the node's taints set in the same patch (when
// t.SetTaints), and it returns the node as the API server answered the patch, for the
// caller's record of its own writes.
func TargetNodeWith(ctx context.Context, c *Clients, t Target) (*corev1.Node, error) {
	node, desired := t.Node, t.Desired
	if msgs := validation.IsDNS1123Subdomain(desired); len(msgs) > 0 {
		return nil, fmt.Errorf("target node %s: rendered config %q: %s", node.Name, desired, strings.Join(msgs, "; "))
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
		return nil, fmt.Errorf("target node %s: %w", node.Name, err)
	}
	patched, err := c.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: t.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("target node %s to %s: %w", node.Name, desired, err)
	}
	return patched, nil
}

// NewMachineConfigNode is the MachineConfigNode of node in pool, owned by the node, with
// desired as its spec, as the agent creates it on its first report.
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
