package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
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

// statusPage is how many objects each list request of ReadStatus asks for: pages keep
// the server's and the client's memory per response flat on large clusters, and the
// decoding of one page overlaps the server's encoding of the next.
const statusPage = 500

// ReadStatus reads the pools (only pool, when given), the MachineConfigNodes and the
// nodes of the pools that have none. The three lists are read at once, each in pages
// (limit and continue), and the nodes as metadata only (labels and annotations are
// all membership and a node without a MachineConfigNode need): the Nodes' status
// is most of their size.
func ReadStatus(ctx context.Context, c *Clients, pool string) (ClusterStatus, error) {
	var st ClusterStatus
	var poolList *mcfgv1.MachineConfigPoolList
	var mcnItems []mcfgv1.MachineConfigNode
	var nodes []*corev1.Node
	var mcnsServed = true
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		poolList, err = c.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(gctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the cluster does not serve MachineConfigPools: neither OpenShift's Machine Config Operator nor mcotui is installed (mcotui install | kubectl apply -f -)")
		}
		if err != nil {
			return fmt.Errorf("list machineconfigpools: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		mcns := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
		opts := metav1.ListOptions{Limit: statusPage}
		for {
			page, err := mcns.List(gctx, opts)
			switch {
			case apierrors.IsNotFound(err):
				// An older OpenShift without the MachineConfigNode API: nodes from annotations.
				mcnsServed = false
				return nil
			case err != nil:
				return fmt.Errorf("list machineconfignodes: %w", err)
			}
			mcnItems = append(mcnItems, page.Items...)
			if page.Continue == "" {
				return nil
			}
			opts.Continue = page.Continue
		}
	})
	g.Go(func() error {
		var err error
		nodes, err = listNodeMetadata(gctx, c)
		return err
	})
	if err := g.Wait(); err != nil {
		return st, err
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
	have := map[string]bool{}
	if mcnsServed {
		for i := range mcnItems {
			m := &mcnItems[i]
			have[m.Name] = true
			if pool == "" || m.Spec.Pool.Name == pool {
				st.MCNs = append(st.MCNs, m)
			}
		}
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

// partialMetadataList asks the API server for a list of objects' metadata alone.
const partialMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// listNodeMetadata lists the Nodes, in pages, as Nodes that carry only their metadata.
func listNodeMetadata(ctx context.Context, c *Clients) ([]*corev1.Node, error) {
	var out []*corev1.Node
	opts := metav1.ListOptions{Limit: statusPage}
	for {
		raw, err := c.Kube.CoreV1().RESTClient().Get().Resource("nodes").
			SetHeader("Accept", partialMetadataList).
			VersionedParams(&opts, metav1.ParameterCodec).
			Do(ctx).Raw()
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		var page metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("list nodes: decode the metadata: %w", err)
		}
		for i := range page.Items {
			out = append(out, &corev1.Node{ObjectMeta: page.Items[i].ObjectMeta})
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
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
