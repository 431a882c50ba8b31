package kube

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

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

// statusPage is how many Nodes each list request of ReadStatus asks for, and how many
// MachineConfigNodes it decodes before handing them on (their list is one request,
// see listMCNs): pages and batches keep the client's memory flat on large clusters.
const statusPage = 500

// ReadStatus reads the pools (only pool, when given), the MachineConfigNodes and the
// nodes of the pools that have none. The three lists are read at once: the
// MachineConfigNodes as one list decoded as a stream (listMCNs), the nodes in pages
// (limit and continue) and as metadata only, in protobuf (labels and annotations are
// all membership and a node without a MachineConfigNode need): the Nodes' status is
// most of their size.
func ReadStatus(ctx context.Context, c *Clients, pool string) (ClusterStatus, error) {
	var st ClusterStatus
	err := streamStatus(ctx, c, pool, statusPage, true, func(p StatusPage) error {
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
	// Nodes are the nodes of MCNs whose names this page covers (metadata only), for
	// what only a node's annotations say (image mode's images).
	Nodes map[string]*corev1.Node
}

// StreamStatus reads what ReadStatus reads, for status's tables, and hands it on to
// page as it arrives, so that a table can be printed before the last page of a large
// cluster is read: first the pools alone (they are few, and read whole), then the
// rows as far as both the MachineConfigNodes' and the Nodes' pages have reached, in
// name order. A node without a MachineConfigNode is known as such once the
// MachineConfigNodes' pages are past its name: the API server lists objects in name
// order (the order of its storage's keys). Were it not to, rows would come out of
// order, none lost. page is called from one goroutine; an error from it stops the
// reading and is returned.
//
// Its MachineConfigNodes hold only what the tables show (mcnTableFields): name,
// creation time, spec.pool and spec.configVersion, and of the status the config
// versions, pinnedImageSets, irreconcilableChanges and each condition's type, status
// and message. Decoding the rest, managedFields most of all, was most of the client's
// time on a large cluster. ReadStatus's are whole.
func StreamStatus(ctx context.Context, c *Clients, pool string, page func(StatusPage) error) error {
	return streamStatus(ctx, c, pool, statusPage, false, page)
}

// streamStatus is StreamStatus with lists read in pages of limit objects, and the
// MachineConfigNodes whole with full (ReadStatus's), else only the fields the tables
// show.
func streamStatus(ctx context.Context, c *Clients, pool string, limit int64, full bool, page func(StatusPage) error) error {
	g, gctx := errgroup.WithContext(ctx)
	var poolList *mcfgv1.MachineConfigPoolList
	poolsRead := make(chan struct{})
	mcnPages := make(chan []*mcfgv1.MachineConfigNode, 4)
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
		err := listMCNs(gctx, c, int(limit), full, func(items []*mcfgv1.MachineConfigNode) error {
			select {
			case mcnPages <- items:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		if apierrors.IsNotFound(err) {
			// An older OpenShift without the MachineConfigNode API: nodes from annotations.
			return nil
		}
		return err
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

func (m *statusMerge) addMCNs(items []*mcfgv1.MachineConfigNode) {
	for _, mc := range items {
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
	for _, n := range m.nodes[:j] {
		if m.have[n.Name] {
			if p.Nodes == nil {
				p.Nodes = map[string]*corev1.Node{}
			}
			p.Nodes[n.Name] = n
		}
	}
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

// listMCNs reads the MachineConfigNodes in one list request and hands them to page in
// batches of batch as it decodes the response: a stream, so memory holds one batch
// and the rows print as they arrive. With full, each is the whole object; without,
// only what status's tables show (mcnTableFields). Not in pages (limit and continue):
// kube-apiserver answers a whole list of a custom resource from its watch cache,
// cheaply, while the pages cost it several times the CPU (docs/benchmarks.md). An
// error of the API server is returned as it is (IsNotFound: the cluster does not serve
// them).
func listMCNs(ctx context.Context, c *Clients, batch int, full bool, page func([]*mcfgv1.MachineConfigNode) error) error {
	body, err := c.MachineConfig.MachineconfigurationV1().RESTClient().Get().Resource("machineconfignodes").Stream(ctx)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("list machineconfignodes: %w", err)
	}
	defer body.Close()
	if full {
		err = decodeItems(body, batch, func(items []mcfgv1.MachineConfigNode) error {
			mcns := make([]*mcfgv1.MachineConfigNode, len(items))
			for i := range items {
				mcns[i] = &items[i]
			}
			return page(mcns)
		})
	} else {
		err = decodeItems(body, batch, func(items []mcnTableFields) error {
			mcns := make([]*mcfgv1.MachineConfigNode, len(items))
			for i := range items {
				mcns[i] = items[i].machineConfigNode()
			}
			return page(mcns)
		})
	}
	if err != nil {
		return fmt.Errorf("list machineconfignodes: %w", err)
	}
	return nil
}

// mcnTableFields is what status's tables show of a MachineConfigNode: the cells of
// statustable.MCNRow (pinned.NodeSummary's among them) and the irreconcilable
// changes. Decoding only these skips the rest of each object unread, its
// managedFields most of all, which are most of its bytes; the conditions keep their
// type, status and message, not their reason and times.
type mcnTableFields struct {
	Metadata struct {
		Name              string      `json:"name"`
		CreationTimestamp metav1.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Pool          mcfgv1.MCOObjectReference                        `json:"pool"`
		ConfigVersion mcfgv1.MachineConfigNodeSpecMachineConfigVersion `json:"configVersion"`
	} `json:"spec"`
	Status struct {
		ConfigVersion *mcfgv1.MachineConfigNodeStatusMachineConfigVersion `json:"configVersion"`
		Conditions    []struct {
			Type    string                 `json:"type"`
			Status  metav1.ConditionStatus `json:"status"`
			Message string                 `json:"message"`
		} `json:"conditions"`
		PinnedImageSets       []mcfgv1.MachineConfigNodeStatusPinnedImageSet `json:"pinnedImageSets"`
		IrreconcilableChanges []mcfgv1.IrreconcilableChangeDiff              `json:"irreconcilableChanges"`
	} `json:"status"`
}

// machineConfigNode is a MachineConfigNode holding f's fields alone.
func (f *mcnTableFields) machineConfigNode() *mcfgv1.MachineConfigNode {
	m := &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: f.Metadata.Name, CreationTimestamp: f.Metadata.CreationTimestamp},
		Spec:       mcfgv1.MachineConfigNodeSpec{Pool: f.Spec.Pool, ConfigVersion: f.Spec.ConfigVersion},
		Status: mcfgv1.MachineConfigNodeStatus{
			ConfigVersion:         f.Status.ConfigVersion,
			PinnedImageSets:       f.Status.PinnedImageSets,
			IrreconcilableChanges: f.Status.IrreconcilableChanges,
		},
	}
	if len(f.Status.Conditions) > 0 {
		m.Status.Conditions = make([]metav1.Condition, len(f.Status.Conditions))
		for i, c := range f.Status.Conditions {
			m.Status.Conditions[i] = metav1.Condition{Type: c.Type, Status: c.Status, Message: c.Message}
		}
	}
	return m
}

// partialMetadataList asks the API server for a list of objects' metadata alone, in
// protobuf (cheaper to encode for the server and to decode here than JSON), or JSON
// from a server that cannot.
const partialMetadataList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// protobufMagic starts every protobuf response of the API server; a runtime.Unknown
// envelope holding the object follows.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// decodeMetadataList decodes a PartialObjectMetadataList in either of the encodings
// partialMetadataList accepts.
func decodeMetadataList(raw []byte) (*metav1.PartialObjectMetadataList, error) {
	var list metav1.PartialObjectMetadataList
	if body, ok := bytes.CutPrefix(raw, protobufMagic); ok {
		var envelope runtime.Unknown
		if err := envelope.Unmarshal(body); err != nil {
			return nil, err
		}
		return &list, list.Unmarshal(envelope.Raw)
	}
	return &list, sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &list)
}

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
		list, err := decodeMetadataList(raw)
		if err != nil {
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
