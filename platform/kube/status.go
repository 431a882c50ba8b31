package kube

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/rollout"
)

// ClusterStatus is what `mcotui status` shows: the pools, their MachineConfigNodes,
// and their members that have none.
type ClusterStatus struct {
	Pools []*mcfgv1.MachineConfigPool
	MCNs  []*mcfgv1.MachineConfigNode
	// Unlisted are pool members without a MachineConfigNode, by name, with their pool.
	Unlisted []UnlistedNode
}

// UnlistedNode is a pool member without a MachineConfigNode.
type UnlistedNode struct {
	Node *corev1.Node
	Pool string
}

// ReadStatus reads the pools (only pool, when given), the MachineConfigNodes and the
// nodes of the pools that have none.
func ReadStatus(ctx context.Context, c *Clients, pool string) (ClusterStatus, error) {
	var st ClusterStatus
	pools := c.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	poolList, err := pools.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return st, fmt.Errorf("the cluster does not serve MachineConfigPools: neither OpenShift's Machine Config Operator nor mcotui is installed (mcotui install | kubectl apply -f -)")
	}
	if err != nil {
		return st, fmt.Errorf("list machineconfigpools: %w", err)
	}
	var all []*mcfgv1.MachineConfigPool
	for i := range poolList.Items {
		p := &poolList.Items[i]
		all = append(all, p)
		if pool == "" || p.Name == pool {
			st.Pools = append(st.Pools, p)
		}
	}
	if pool != "" && len(st.Pools) == 0 {
		return st, fmt.Errorf("machineconfigpool %q not found (the cluster has %s)", pool, poolNames(all))
	}
	mcnList, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// An older OpenShift without the MachineConfigNode API: nodes from annotations.
	case err != nil:
		return st, fmt.Errorf("list machineconfignodes: %w", err)
	}
	have := map[string]bool{}
	if mcnList != nil {
		for i := range mcnList.Items {
			m := &mcnList.Items[i]
			have[m.Name] = true
			if pool == "" || m.Spec.Pool.Name == pool {
				st.MCNs = append(st.MCNs, m)
			}
		}
	}
	nodeList, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]*corev1.Node, len(nodeList.Items))
	for i := range nodeList.Items {
		nodes[i] = &nodeList.Items[i]
	}
	for _, p := range st.Pools {
		members, _ := rollout.Members(p, all, nodes)
		for _, n := range members {
			if !have[n.Name] {
				st.Unlisted = append(st.Unlisted, UnlistedNode{Node: n, Pool: p.Name})
			}
		}
	}
	slices.SortFunc(st.Pools, func(a, b *mcfgv1.MachineConfigPool) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(st.MCNs, func(a, b *mcfgv1.MachineConfigNode) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(st.Unlisted, func(a, b UnlistedNode) int { return cmp.Compare(a.Node.Name, b.Node.Name) })
	return st, nil
}

func poolNames(pools []*mcfgv1.MachineConfigPool) string {
	if len(pools) == 0 {
		return "no pools"
	}
	names := make([]string, len(pools))
	for i, p := range pools {
		names[i] = p.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
