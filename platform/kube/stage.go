package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// StageNode asks node's agent to download and stage the OS image image before the node
// is given the config that changes it (nodeanno.StageImageKey), on the version of the
// node the caller decided on (a node changed since answers 409 Conflict). It returns
// the node as the API server answered, for the caller's record of its own writes.
func StageNode(ctx context.Context, c *Clients, node *corev1.Node, image, fieldManager string) (*corev1.Node, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"annotations":     map[string]string{nodeanno.StageImageKey: image},
	}})
	if err != nil {
		return nil, err
	}
	patched, err := c.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, fmt.Errorf("ask node %s to stage the OS image %s: %w", node.Name, image, err)
	}
	return patched, nil
}
