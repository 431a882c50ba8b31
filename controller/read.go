package controller

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// PoolState is a pool and its member nodes.
type PoolState struct {
	Pool *mcfgv1.MachineConfigPool
	// Nodes are the pool's members (see rollout.Members), by name.
	Nodes []*corev1.Node
	// Problems are nodes the pool selects that belong to no pool (see rollout.PoolFor).
	Problems []error
}

// ReadPool reads the pool named pool and its members from the API server (not from a
// cache), and writes nothing: what a one-off look (`mcotui rollout`'s plan, its
// --wait's following) shows. It is the read-only side of the rollout, apart from the
// driver that steps it (the controller's rollout loop, a DriveSession).
func ReadPool(ctx context.Context, c *kube.Clients, pool string) (PoolState, error) {
	p, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return PoolState{}, fmt.Errorf("get machineconfigpool %s: %w", pool, err)
	}
	poolList, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{})
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
		nodeList, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
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
