package model

import (
	"strconv"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/internal/layout"
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
	// Waiting: in progress, and reporting what holds it (the agent retries it); drawn
	// apart from a phase that moves.
	Waiting bool
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

	// Degraded is what MCO counts as degraded (DegradedMachineCount): NodeDegraded True,
	// or the agent's state Degraded or Unreconcilable. A phase that reports an error
	// while the agent still retries it is not a failure: it is Waiting.
	Degraded bool
	Updating bool // a phase is in progress, or current differs from desired
	// Waiting: a phase in progress reports what holds it (a drain blocked by a
	// PodDisruptionBudget, retried by the agent), and the node is not degraded. WaitFor
	// is the condition's message; the phase's cell is drawn in progress.
	Waiting bool
	WaitFor string
	// Behind: the node runs its own desired config, but that is not its pool's target:
	// it waits for the rollout to reach it. It is not Done.
	Behind bool
	Target string // the pool's spec.configuration.name when the node was derived

	// Ready is the kubelet's Ready condition as kubectl prints it: Ready when True,
	// NotReady otherwise (Unknown too: the kubelet stopped posting, as during a reboot),
	// Unknown when the Node has no Ready condition; "" without a Node object.
	Ready         string
	Unschedulable bool
	AdminCordoned bool // cordoned by someone other than mcotui: stays cordoned after
	// Retry is the agent's next try of what failed (an update, a drain attempt), from
	// nodeanno.RetryKey; Attempt is 0 when it has none.
	Retry nodeanno.Retry
	// Blockers are the pods holding a drain, parsed from the Drained condition, whether
	// the drain waits on them or failed on them.
	Blockers []phase.Blocker

	// Stage is where the node is in staging its next OS image before its drain, and
	// StageText says it in words (rollout.NodeStage); StageNone when not asked to.
	Stage     rollout.StageState
	StageText string
	// StagePercent is how much of the OS image a pulling node has downloaded, in
	// percent of the bytes its agent announced (nodeanno.StageProgressKey); -1 when
	// not known.
	StagePercent int

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

// Done reports whether the node runs its desired config, says so, and that config is
// its pool's target.
func (n *Node) Done() bool {
	return !n.Degraded && !n.Updating && !n.Behind && n.Cells[updatedColumn].State == phase.Done
}

// Status is the node's readiness as `kubectl get nodes` prints its STATUS:
// "Ready,SchedulingDisabled" and the like; "" when nothing is known.
func (n *Node) Status() string {
	s := n.Ready
	if n.Unschedulable {
		if s == "" {
			s = "Unknown"
		}
		s += ",SchedulingDisabled"
	}
	return s
}

// RetryText says when the agent tries again: "retry 3, next in 40s", "retry 3, due now"
// once the time has passed; "" without a retry.
func (n *Node) RetryText(now time.Time) string {
	if n.Retry.Attempt == 0 {
		return ""
	}
	return "retry " + strconv.Itoa(n.Retry.Attempt) + ", " + n.retryWhen(now, "next in ")
}

// ShortRetry is RetryText in a few cells, for the grid's clock column: "r3 in 40s".
func (n *Node) ShortRetry(now time.Time) string {
	if n.Retry.Attempt == 0 {
		return ""
	}
	return "r" + strconv.Itoa(n.Retry.Attempt) + " " + n.retryWhen(now, "in ")
}

func (n *Node) retryWhen(now time.Time, in string) string {
	d := n.Retry.Next.Sub(now)
	if d <= 0 {
		return "due now"
	}
	return in + layout.Age(d)
}

// ShortStatus is Status in at most 11 cells, for narrow grids: "NotReady,SD".
func (n *Node) ShortStatus() string {
	s := n.Ready
	if n.Unschedulable {
		if s == "" {
			s = "Unknown"
		}
		s += ",SD"
	}
	return s
}

// build derives a Node from its API objects. pool resolves the pool of a node that has no
// MachineConfigNode yet; target returns a pool's target config ("" when unknown).
func build(name string, obj *corev1.Node, mcn *mcfgv1.MachineConfigNode, pool func(*corev1.Node) string, target func(string) string) *Node {
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
		n.Ready = readiness(obj)
		n.Retry, _ = nodeanno.RetryOf(obj)
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
			if st == phase.Failed && col != degradedColumn && n.WaitFor == "" {
				n.WaitFor = c.Message
			}
		}
	}
	if n.Pool == "" && obj != nil && pool != nil {
		n.Pool = pool(obj)
	}
	n.StagePercent = -1
	if obj != nil {
		n.Stage, n.StageText = rollout.NodeStage(obj, mcn)
		if p, ok := nodeanno.Progress(obj); ok && n.Stage == rollout.StagePulling && p.TotalBytes > 0 {
			n.StagePercent = int(min(100, p.Bytes*100/p.TotalBytes))
		}
	}

	// The agent's state decides as the controller's pool status counts it
	// (rollout.IsDegraded); a MachineConfigNode reporting NodeDegraded says the same.
	if n.Cells[degradedColumn].State == phase.Failed || rollout.IsDegraded(n.Desired, n.State) {
		n.Degraded = true
	}
	// A phase reporting an error is a failure only once the node is degraded (MCO's
	// DegradedMachineCount counts the same nodes); until then the agent is retrying it
	// and the phase is waiting, drawn in progress.
	if !n.Degraded {
		for i := 0; i < degradedColumn; i++ {
			if n.Cells[i].State == phase.Failed {
				n.Cells[i].State = phase.InProgress
				n.Cells[i].Waiting = true
				n.Waiting = true
			}
		}
	}
	if !n.Waiting && !n.Degraded {
		n.WaitFor = ""
	}

	lastDone := -1
	for i := 0; i < degradedColumn; i++ {
		switch n.Cells[i].State {
		case phase.InProgress, phase.Failed:
			if n.Phase < 0 {
				n.Phase = i
			}
			if n.Cells[i].State == phase.InProgress {
				n.Updating = true
			}
		case phase.Done:
			lastDone = i
		}
	}
	moving := n.Phase >= 0 // a phase is in progress or failed
	if n.Phase < 0 {
		n.Phase = lastDone
	}
	if n.Phase >= 0 {
		n.Since = n.Cells[n.Phase].Since
	}
	if n.Desired != "" && n.Current != n.Desired {
		n.Updating = true
		// Updated=True is the last update's, until the agent takes up the new desired
		// config and sets it False: a node just given its target is not drawn updated.
		if c := &n.Cells[updatedColumn]; c.State == phase.Done {
			c.State = phase.NotStarted
			if !moving {
				// Every phase done is the last update's too: the new one has not
				// started, and IN PHASE must not count the old phase's age.
				n.Phase, n.Since = -1, time.Time{}
			}
		}
	}
	if n.Degraded {
		n.Updating = false
	}
	if target != nil && n.Pool != "" {
		n.Target = target(n.Pool)
	}
	n.Behind = !n.Degraded && !n.Updating && n.Target != "" && n.Current == n.Desired && n.Current != n.Target
	return n
}

// readiness is the Node's Ready condition in kubectl's words.
func readiness(obj *corev1.Node) string {
	for i := range obj.Status.Conditions {
		c := &obj.Status.Conditions[i]
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return "Ready"
		}
		return "NotReady"
	}
	return "Unknown"
}
