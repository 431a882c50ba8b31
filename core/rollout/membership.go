package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// Pool names MCO ranks when a node matches several pools.
const (
	MasterPool = "master"
	WorkerPool = "worker"
)

// PoolFor returns the pool node belongs to among pools, by MCO's rules
// (pkg/helpers/helpers.go GetPoolsForNode and GetPrimaryPoolForNode): of the pools whose
// nodeSelector matches the node, master wins, then the one custom pool (any pool but
// master and worker), then worker. nil when no pool selects the node. A node matched by
// two custom pools belongs to neither: the error says so, as MCO refuses such a node.
// A pool with no nodeSelector, or an empty one, selects no node.
func PoolFor(node *corev1.Node, pools []*mcfgv1.MachineConfigPool) (*mcfgv1.MachineConfigPool, error) {
	return poolFor(node, pools, func(p *mcfgv1.MachineConfigPool) bool { return Selects(p, node) })
}

// poolFor is PoolFor with selects telling which pools select the node.
func poolFor(node *corev1.Node, pools []*mcfgv1.MachineConfigPool, selects func(*mcfgv1.MachineConfigPool) bool) (*mcfgv1.MachineConfigPool, error) {
	p, custom := pick(pools, selects)
	if len(custom) > 1 {
		return nil, fmt.Errorf("node %s is selected by the custom pools %s: a node belongs to at most one custom pool; change the pools' nodeSelectors or the node's labels", node.Name, strings.Join(custom, ", "))
	}
	return p, nil
}

// pick is MCO's precedence among the pools that select a node: master, then the one
// custom pool, then worker (nil when none selects it). With two custom pools or more it
// picks none and returns their names, sorted.
func pick(pools []*mcfgv1.MachineConfigPool, selects func(*mcfgv1.MachineConfigPool) bool) (*mcfgv1.MachineConfigPool, []string) {
	var master, worker *mcfgv1.MachineConfigPool
	var custom []*mcfgv1.MachineConfigPool
	for _, p := range pools {
		if !selects(p) {
			continue
		}
		switch p.Name {
		case MasterPool:
			master = p
		case WorkerPool:
			worker = p
		default:
			custom = append(custom, p)
		}
	}
	if len(custom) > 1 {
		names := make([]string, len(custom))
		for i, p := range custom {
			names[i] = p.Name
		}
		slices.Sort(names)
		return nil, names
	}
	switch {
	case master != nil:
		return master, nil
	case len(custom) == 1:
		return custom[0], nil
	}
	return worker, nil
}

// NodeRolePrefix begins the node-role.kubernetes.io/<role> labels that MCO's default
// pools select on (master and worker; a custom pool by the same convention).
const NodeRolePrefix = "node-role.kubernetes.io/"

// RoleOf is the pool a node-role.kubernetes.io/<role> label puts a node in by MCO's
// convention: the role, master for the control-plane role. ok is false for any other
// label.
func RoleOf(label string) (pool string, ok bool) {
	role, ok := strings.CutPrefix(label, NodeRolePrefix)
	switch {
	case !ok:
		return "", false
	case role == "control-plane":
		return MasterPool, true
	}
	return role, true
}

// RolePool is the pool a node belongs to by its role labels alone, for a caller that has
// no pools to match it against (the agent names its MachineConfigNode's pool before it
// reads any): PoolFor over one pool per role that selects on that role's label, as MCO's
// master and worker pools do, with the control-plane role counting as master. A node
// with no role but worker, or no role at all, is a worker.
func RolePool(node *corev1.Node) (string, error) {
	var pools []*mcfgv1.MachineConfigPool
	for k := range node.Labels {
		role, ok := RoleOf(k)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(pools, func(p *mcfgv1.MachineConfigPool) bool { return p.Name == role }) {
			pools = append(pools, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: role}})
		}
	}
	p, custom := pick(pools, func(*mcfgv1.MachineConfigPool) bool { return true })
	switch {
	case len(custom) > 1:
		return "", fmt.Errorf("node %s has the roles %s: a node belongs to at most one custom pool", node.Name, strings.Join(custom, ", "))
	case p == nil:
		return WorkerPool, nil
	}
	return p.Name, nil
}

// Membership places nodes among a fixed set of pools, as PoolFor does, with the pools'
// selectors parsed once: for callers that place many nodes against the same pools (the
// TUI's store places every node that has no MachineConfigNode yet).
type Membership struct {
	pools []*mcfgv1.MachineConfigPool
	sels  map[*mcfgv1.MachineConfigPool]labels.Selector
}

// NewMembership returns the Membership of pools. The pools must not change while it is
// in use.
func NewMembership(pools []*mcfgv1.MachineConfigPool) *Membership {
	sels := make(map[*mcfgv1.MachineConfigPool]labels.Selector, len(pools))
	for _, p := range pools {
		sels[p] = selectorOf(p)
	}
	return &Membership{pools: pools, sels: sels}
}

// PoolFor is PoolFor(node, pools) for the Membership's pools.
func (m *Membership) PoolFor(node *corev1.Node) (*mcfgv1.MachineConfigPool, error) {
	set := labels.Set(node.Labels)
	return poolFor(node, m.pools, func(p *mcfgv1.MachineConfigPool) bool {
		sel := m.sels[p]
		return sel != nil && sel.Matches(set)
	})
}

// Selects reports whether the pool's nodeSelector matches the node. A pool with no
// nodeSelector, or an empty one, selects no node. Matching is not membership: see
// PoolFor.
func Selects(p *mcfgv1.MachineConfigPool, node *corev1.Node) bool {
	sel := selectorOf(p)
	return sel != nil && sel.Matches(labels.Set(node.Labels))
}

// selectorOf is the pool's nodeSelector, or nil when it selects no node.
func selectorOf(p *mcfgv1.MachineConfigPool) labels.Selector {
	if p.Spec.NodeSelector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

// Members returns the nodes that belong to pool (see PoolFor), by name, and the errors
// of nodes its nodeSelector matches that belong to no pool because two custom pools
// select them.
func Members(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool, nodes []*corev1.Node) ([]*corev1.Node, []error) {
	sels := selectors(pool, pools)
	var out []*corev1.Node
	var problems []error
	for _, n := range nodes {
		if n == nil {
			continue
		}
		switch in, err := memberOf(pool, pools, sels, n); {
		case err != nil:
			problems = append(problems, err)
		case in:
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	return out, problems
}

// selectors parses the pools' selectors once, not once per node and pool: on 5,000
// nodes that was most of a rollout sync's time.
func selectors(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool) map[*mcfgv1.MachineConfigPool]labels.Selector {
	sels := make(map[*mcfgv1.MachineConfigPool]labels.Selector, len(pools)+1)
	for _, p := range append([]*mcfgv1.MachineConfigPool{pool}, pools...) {
		sels[p] = selectorOf(p)
	}
	return sels
}

// memberOf reports whether n belongs to pool, or, when pool's selector matches it, the
// error that keeps it out of every pool (see PoolFor).
func memberOf(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool, sels map[*mcfgv1.MachineConfigPool]labels.Selector, n *corev1.Node) (bool, error) {
	set := labels.Set(n.Labels)
	if sel := sels[pool]; sel == nil || !sel.Matches(set) {
		return false, nil
	}
	p, err := poolFor(n, pools, func(p *mcfgv1.MachineConfigPool) bool {
		sel := sels[p]
		return sel != nil && sel.Matches(set)
	})
	if err != nil {
		return false, err
	}
	return p != nil && p.Name == pool.Name, nil
}

// unenrolled stands, only inside planning, for the config of a node mcotui has never
// given one: a node without currentConfig and desiredConfig annotations, as every node
// is when mcotui is installed on a running cluster. MCO never meets such a node (its
// machine-config server annotates nodes as they join), and its rules would count it as
// unavailable forever, which would stall every rollout on a fresh install. The node
// runs no update, so for planning it is an idle node at a config older than any:
// available, and a candidate like any node at an older config. The name cannot be a
// MachineConfig's, so it never meets a real one.
const unenrolled = "(unenrolled)"

// PlanningView returns nodes for core/rollout: nodes mcotui has never given a config
// (no currentConfig, desiredConfig or state annotation) appear Done at a placeholder
// config, so that they count as available candidates rather than as unavailable; see
// IsUnenrolled. Other nodes are returned as they are. The input is not modified.
func PlanningView(nodes []*corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		if !IsUnenrolled(n) {
			out[i] = n
			continue
		}
		c := n.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[nodeanno.CurrentConfigKey] = unenrolled
		c.Annotations[nodeanno.DesiredConfigKey] = unenrolled
		c.Annotations[nodeanno.StateKey] = nodeanno.StateDone
		out[i] = c
	}
	return out
}

// IsUnenrolled reports whether mcotui has never given the node a config: it has none
// of the currentConfig, desiredConfig and state annotations.
func IsUnenrolled(n *corev1.Node) bool {
	return n != nil && nodeanno.Current(n) == "" && nodeanno.Desired(n) == "" && nodeanno.State(n) == ""
}

// IsPlaceholder reports whether a config name in a plan made over PlanningView is the
// placeholder of an unenrolled node rather than a rendered config.
func IsPlaceholder(name string) bool { return name == unenrolled }

// ConfigName is name as a plan made over PlanningView shows it to people: the
// placeholder of an unenrolled node becomes "" (no config).
func ConfigName(name string) string {
	if IsPlaceholder(name) {
		return ""
	}
	return name
}
