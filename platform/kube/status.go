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
	err := StreamStatus(ctx, c, pool, func(p StatusPage) error {
		if p.First {
			st.Pools = p.Pools
		}
		st.MCNs = append(st.MCNs, p.MCNs...)
		st.Unlisted = append(st.Unlisted, p.Unlisted...)
		return nil
	})
	if err != nil {
		return ClusterStatus{}, err
	}
	// The pages come in name order already; sorting again keeps ReadStatus's order
	// whatever the server does.
	slices.SortFunc(st.MCNs, func(a, b *mcfgv1.MachineConfigNode) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(st.Unlisted, func(a, b UnlistedNode) int { return cmp.Compare(a.Node.Name, b.Node.Name) })
	return st, nil
}

// StatusPage is a part of what ReadStatus reads, as StreamStatus hands it on.
type StatusPage struct {
	// First is set on the first page, the only one with Pools: every pool shown,
	// sorted by name.
	First bool
	Pools []*mcfgv1.MachineConfigPool
	// MCNs and Unlisted are the next rows (ClusterStatus's), each sorted by name,
	// and every name after those of the pages before.
	MCNs     []*mcfgv1.MachineConfigNode
	Unlisted []UnlistedNode
}

// StreamStatus reads what ReadStatus reads and hands it on to page as it arrives, so
// that a table can be printed before the last page of a large cluster is read: first
// the pools alone (they are few, and read whole), then the rows as far as both the
// MachineConfigNodes' and the Nodes' pages have reached, in name order. A node
// without a MachineConfigNode is known as such once the MachineConfigNodes' pages
// are past its name: the API server lists objects in name order (the order of its
// storage's keys). Were it not to, rows would come out of order, none lost. page is
// called from one goroutine; an error from it stops the reading and is returned.
func StreamStatus(ctx context.Context, c *Clients, pool string, page func(StatusPage) error) error {
	return streamStatus(ctx, c, pool, statusPage, page)
}

// streamStatus is StreamStatus with lists read in pages of limit objects.
func streamStatus(ctx context.Context, c *Clients, pool string, limit int64, page func(StatusPage) error) error {
	g, gctx := errgroup.WithContext(ctx)
	var poolList *mcfgv1.MachineConfigPoolList
	poolsRead := make(chan struct{})
	mcnPages := make(chan []mcfgv1.MachineConfigNode, 4)
	nodePages := make(chan []*corev1.Node, 4)
	g.Go(func() error {
		var err error
		poolList, err = c.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(gctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the cluster does not serve MachineConfigPools: neither OpenShift's Machine Config Operator nor mcotui is installed (mcotui install | kubectl apply -f -)")
		}
		if err != nil {
			return fmt.Errorf("list machineconfigpools: %w", err)
		}
		close(poolsRead)
		return nil
	})
	g.Go(func() error {
		defer close(mcnPages)
		mcns := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
		opts := metav1.ListOptions{Limit: limit}
		for {
			list, err := mcns.List(gctx, opts)
			switch {
			case apierrors.IsNotFound(err):
				// An older OpenShift without the MachineConfigNode API: nodes from annotations.
				return nil
			case err != nil:
				return fmt.Errorf("list machineconfignodes: %w", err)
			}
			select {
			case mcnPages <- list.Items:
			case <-gctx.Done():
				return gctx.Err()
			}
			if list.Continue == "" {
				return nil
			}
			opts.Continue = list.Continue
		}
	})
	g.Go(func() error {
		defer close(nodePages)
		return listNodeMetadata(gctx, c, limit, func(nodes []*corev1.Node) error {
			select {
			case nodePages <- nodes:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	g.Go(func() error {
		select {
		case <-poolsRead:
		case <-gctx.Done():
			return gctx.Err()
		}
		m := statusMerge{pool: pool, page: page, have: map[string]bool{}}
		if err := m.pools(poolList); err != nil {
			return err
		}
		// A list read to its end is set to nil, which select never picks again.
		mcnsIn, nodesIn := mcnPages, nodePages
		for mcnsIn != nil || nodesIn != nil {
			select {
			case items, ok := <-mcnsIn:
				if !ok {
					mcnsIn = nil
					break
				}
				m.addMCNs(items)
			case nodes, ok := <-nodesIn:
				if !ok {
					nodesIn = nil
					break
				}
				m.addNodes(nodes)
			case <-gctx.Done():
				return gctx.Err()
			}
			if err := m.emit(mcnsIn != nil, nodesIn != nil); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// statusMerge merges the pages of MachineConfigNodes and Nodes into StatusPages.
type statusMerge struct {
	pool  string
	page  func(StatusPage) error
	all   []*mcfgv1.MachineConfigPool
	shown []*mcfgv1.MachineConfigPool

	have     map[string]bool // MachineConfigNodes read, by name
	mcns     []*mcfgv1.MachineConfigNode
	nodes    []*corev1.Node
	lastMCN  string // the greatest name read of each
	lastNode string
}

// pools hands on the first page, the pools.
func (m *statusMerge) pools(list *mcfgv1.MachineConfigPoolList) error {
	for i := range list.Items {
		p := &list.Items[i]
		m.all = append(m.all, p)
		if m.pool == "" || p.Name == m.pool {
			m.shown = append(m.shown, p)
		}
	}
	if m.pool != "" && len(m.shown) == 0 {
		return fmt.Errorf("machineconfigpool %q not found (the cluster has %s)", m.pool, poolNames(m.all))
	}
	slices.SortFunc(m.shown, func(a, b *mcfgv1.MachineConfigPool) int { return cmp.Compare(a.Name, b.Name) })
	return m.page(StatusPage{First: true, Pools: m.shown})
}

func (m *statusMerge) addMCNs(items []mcfgv1.MachineConfigNode) {
	for i := range items {
		mc := &items[i]
		m.have[mc.Name] = true
		m.lastMCN = max(m.lastMCN, mc.Name)
		if m.pool == "" || mc.Spec.Pool.Name == m.pool {
			m.mcns = append(m.mcns, mc)
		}
	}
}

func (m *statusMerge) addNodes(nodes []*corev1.Node) {
	for _, n := range nodes {
		m.lastNode = max(m.lastNode, n.Name)
	}
	m.nodes = append(m.nodes, nodes...)
}

// emit hands on the rows whose names both lists have passed (all of them once
// neither is open).
func (m *statusMerge) emit(mcnsOpen, nodesOpen bool) error {
	upTo := func(string) bool { return true }
	switch {
	case mcnsOpen && nodesOpen:
		limit := min(m.lastMCN, m.lastNode)
		upTo = func(name string) bool { return name <= limit }
	case mcnsOpen:
		upTo = func(name string) bool { return name <= m.lastMCN }
	case nodesOpen:
		upTo = func(name string) bool { return name <= m.lastNode }
	}
	slices.SortFunc(m.mcns, func(a, b *mcfgv1.MachineConfigNode) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(m.nodes, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	i := 0
	for i < len(m.mcns) && upTo(m.mcns[i].Name) {
		i++
	}
	j := 0
	for j < len(m.nodes) && upTo(m.nodes[j].Name) {
		j++
	}
	if i == 0 && j == 0 {
		return nil
	}
	p := StatusPage{MCNs: slices.Clip(m.mcns[:i])}
	for _, pool := range m.shown {
		members, _ := rollout.Members(pool, m.all, m.nodes[:j])
		for _, n := range members {
			if !m.have[n.Name] {
				p.Unlisted = append(p.Unlisted, UnlistedNode{Node: n, Pool: pool.Name})
			}
		}
	}
	slices.SortFunc(p.Unlisted, func(a, b UnlistedNode) int { return cmp.Compare(a.Node.Name, b.Node.Name) })
	m.mcns, m.nodes = m.mcns[i:], m.nodes[j:]
	if len(p.MCNs) == 0 && len(p.Unlisted) == 0 {
		return nil
	}
	return m.page(p)
}

// partialMetadataList asks the API server for a list of objects' metadata alone.
const partialMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// listNodeMetadata lists the Nodes, in pages, as Nodes that carry only their
// metadata, and hands each page to page.
func listNodeMetadata(ctx context.Context, c *Clients, limit int64, page func([]*corev1.Node) error) error {
	opts := metav1.ListOptions{Limit: limit}
	for {
		raw, err := c.Kube.CoreV1().RESTClient().Get().Resource("nodes").
			SetHeader("Accept", partialMetadataList).
			VersionedParams(&opts, metav1.ParameterCodec).
			Do(ctx).Raw()
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		var list metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("list nodes: decode the metadata: %w", err)
		}
		nodes := make([]*corev1.Node, len(list.Items))
		for i := range list.Items {
			nodes[i] = &corev1.Node{ObjectMeta: list.Items[i].ObjectMeta}
		}
		if err := page(nodes); err != nil {
			return err
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
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
