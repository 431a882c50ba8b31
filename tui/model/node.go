package model

import (
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// NumPhases is the number of grid columns, len(phase.Columns).
const NumPhases = 10

// Indexes in phase.Columns that the model reads by position. NodeDegraded is a verdict
// on the update rather than a step of it, so it never counts as the node's current phase.
const (
	updatedColumn  = 7
	degradedColumn = NumPhases - 1
)

// columnOf maps a condition type to its index in phase.Columns; it is filled once at
// start and only read after.
var columnOf = map[string]int{}

func init() {
	for i, c := range phase.Columns {
		columnOf[string(c)] = i
	}
	// A compile-time size for Cells keeps a Node free of a per-node slice; this guards
	// the constants against core/phase reordering or growing its columns.
	if len(phase.Columns) != NumPhases || phase.Columns[degradedColumn] != phase.NodeDegraded ||
		phase.Columns[updatedColumn] != phase.Updated {
		panic("model: NumPhases does not match phase.Columns")
	}
}

// Cell is one phase of one node, as the grid draws it.
type Cell struct {
	// Present is false when the MachineConfigNode has no condition of this type (MCO
	// creates them all, so this means an older writer or no MachineConfigNode at all).
	Present bool
	State   phase.State
	Since   time.Time // the condition's lastTransitionTime
}

// Node is one node of the cluster joined with its MachineConfigNode, and what follows
// from them. A Node is immutable once the Store publishes it: a change makes a new Node,
// so that views holding the old pointer can still find where it was (see List.Sync) and
// caches can key on the pointer.
type Node struct {
	Name    string
	Pool    string
	Current string // rendered config the node runs
	Desired string // rendered config the node should run
	State   string // the agent's state annotation (Working, Done, Degraded, ...)
	Reason  string // the agent's reason annotation

	Cells [NumPhases]Cell
	// Phase is the index in phase.Columns of the phase the node is in: the first one in
	// progress or failed, else the last one done; -1 when the update has not started.
	Phase int
	// Since is when the node entered Phase (zero when Phase is -1).
	Since time.Time

	Degraded      bool // NodeDegraded True, a phase failed, or the agent says Degraded
	Updating      bool // a phase is in progress, or current differs from desired
	Unschedulable bool
	AdminCordoned bool // cordoned by someone other than mcotui: stays cordoned after
	// Blockers are the pods holding a failed drain, parsed from the Drained condition.
	Blockers []phase.Blocker

	// Obj and MCN are the API objects the node was derived from (either may be nil).
	// They belong to the source's cache and must not be modified.
	Obj *corev1.Node
	MCN *mcfgv1.MachineConfigNode
}

// PhaseName is the name of the node's current phase, or "" before the update starts.
func (n *Node) PhaseName() string {
	if n.Phase < 0 {
		return ""
	}
	return string(phase.Columns[n.Phase])
}

// Done reports whether the node runs its desired config and says so.
func (n *Node) Done() bool {
	return !n.Degraded && !n.Updating && n.Cells[updatedColumn].State == phase.Done
}

// build derives a Node from its API objects. pool resolves the pool of a node that has no
// MachineConfigNode yet.
func build(name string, obj *corev1.Node, mcn *mcfgv1.MachineConfigNode, pool func(*corev1.Node) string) *Node {
	n := &Node{Name: name, Obj: obj, MCN: mcn, Phase: -1}
	// The node's annotations are what the agent and MCO's daemon act on, so they win;
	// the MachineConfigNode fills in when a node has none (the TUI may see the
	// MachineConfigNode before the Node).
	if obj != nil {
		n.Current = nodeanno.Current(obj)
		n.Desired = nodeanno.Desired(obj)
		n.State = nodeanno.State(obj)
		n.Reason = nodeanno.Reason(obj)
		n.Unschedulable = obj.Spec.Unschedulable
		n.AdminCordoned = nodeanno.AdminCordoned(obj)
	}
	if mcn != nil {
		n.Pool = mcn.Spec.Pool.Name
		if n.Desired == "" {
			n.Desired = mcn.Spec.ConfigVersion.Desired
		}
		if n.Current == "" && mcn.Status.ConfigVersion != nil {
			n.Current = mcn.Status.ConfigVersion.Current
		}
		// One pass over the conditions: this runs for every node of every burst.
		for i := range mcn.Status.Conditions {
			c := &mcn.Status.Conditions[i]
			col, ok := columnOf[c.Type]
			if !ok || n.Cells[col].Present {
				continue
			}
			st := phase.StateOf(*c)
			n.Cells[col] = Cell{Present: true, State: st, Since: c.LastTransitionTime.Time}
			if c.Type == string(phase.Drained) && st == phase.Failed {
				n.Blockers = ParseBlockers(c.Message)
			}
		}
	}
	if n.Pool == "" && obj != nil && pool != nil {
		n.Pool = pool(obj)
	}

	lastDone := -1
	for i := 0; i < degradedColumn; i++ {
		switch n.Cells[i].State {
		case phase.InProgress, phase.Failed:
			if n.Phase < 0 {
				n.Phase = i
			}
			if n.Cells[i].State == phase.Failed {
				n.Degraded = true
			} else {
				n.Updating = true
			}
		case phase.Done:
			lastDone = i
		}
	}
	if n.Phase < 0 {
		n.Phase = lastDone
	}
	if n.Phase >= 0 {
		n.Since = n.Cells[n.Phase].Since
	}
	if n.Cells[degradedColumn].State == phase.Failed ||
		n.State == nodeanno.StateDegraded || n.State == nodeanno.StateUnreconcilable {
		n.Degraded = true
	}
	if n.Desired != "" && n.Current != n.Desired {
		n.Updating = true
	}
	if n.Degraded {
		n.Updating = false
	}
	return n
}
