// Package statustable computes the cells of `mcotui status`'s tables, the columns of
// the CRDs' additionalPrinterColumns as kubectl shows them (`oc get mcp` and `oc get
// machineconfignodes [-o wide]`); the command only prints them.
package statustable

import (
	"cmp"
	"slices"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/core/rollout"
)

// PoolColumns are the headers of the pool table.
var PoolColumns = []string{"NAME", "CONFIG", "UPDATED", "UPDATING", "DEGRADED", "MACHINECOUNT", "READYMACHINECOUNT", "UPDATEDMACHINECOUNT", "DEGRADEDMACHINECOUNT", "AGE"}

// nodeColumns are the headers of the node table, and nodeWide the priority-1 columns
// that -o wide adds, with the condition each shows.
var (
	nodeColumns = []string{"NAME", "POOLNAME", "DESIREDCONFIG", "CURRENTCONFIG", "UPDATED", "AGE"}
	nodeWide    = []struct {
		header string
		cond   mcfgv1.StateProgress
	}{
		{"UPDATEPREPARED", mcfgv1.MachineConfigNodeUpdatePrepared},
		{"UPDATEEXECUTED", mcfgv1.MachineConfigNodeUpdateExecuted},
		{"UPDATEPOSTACTIONCOMPLETE", mcfgv1.MachineConfigNodeUpdatePostActionComplete},
		{"UPDATECOMPLETE", mcfgv1.MachineConfigNodeUpdateComplete},
		{"RESUMED", mcfgv1.MachineConfigNodeResumed},
		{"UPDATEDFILESANDOS", mcfgv1.MachineConfigNodeUpdateFilesAndOS},
		{"CORDONEDNODE", mcfgv1.MachineConfigNodeUpdateCordoned},
		{"DRAINEDNODE", mcfgv1.MachineConfigNodeUpdateDrained},
		{"REBOOTEDNODE", mcfgv1.MachineConfigNodeUpdateRebooted},
		{"UNCORDONEDNODE", mcfgv1.MachineConfigNodeUpdateUncordoned},
		// Beyond oc's columns: the pinned-image phases, which the CRD prints nowhere.
		{"PINNEDIMAGESETSPROGRESSING", mcfgv1.MachineConfigNodePinnedImageSetsProgressing},
		{"PINNEDIMAGESETSDEGRADED", mcfgv1.MachineConfigNodePinnedImageSetsDegraded},
	}
)

// pinnedHeader is a wide column: the node's pinned-image progress in words
// (pinned.NodeSummary); stageHeader the next OS image it stages before its drain
// (rollout.NodeStage).
const (
	pinnedHeader = "PINNEDIMAGES"
	stageHeader  = "OSIMAGESTAGE"
)

// imageHeaders are the last wide columns: image mode's desired and current OS image
// of the node (its desiredImage and currentImage annotations), empty without it.
var imageHeaders = []string{"DESIREDIMAGE", "CURRENTIMAGE"}

// PoolRow is pool p's row of the pool table, in PoolColumns; now ages it. The counts
// are numbers, for the printer to format.
func PoolRow(p *mcfgv1.MachineConfigPool, now time.Time) []any {
	cond := func(t mcfgv1.MachineConfigPoolConditionType) string {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return string(c.Status)
			}
		}
		return ""
	}
	return []any{p.Name, p.Status.Configuration.Name,
		cond(mcfgv1.MachineConfigPoolUpdated), cond(mcfgv1.MachineConfigPoolUpdating), cond(mcfgv1.MachineConfigPoolDegraded),
		p.Status.MachineCount, p.Status.ReadyMachineCount, p.Status.UpdatedMachineCount, p.Status.DegradedMachineCount,
		Age(p.CreationTimestamp, now)}
}

// NodeColumns are the headers of the node table; wide adds the phase columns.
func NodeColumns(wide bool) []string {
	h := slices.Clone(nodeColumns)
	if wide {
		for _, c := range nodeWide {
			h = append(h, c.header)
		}
		h = append(h, pinnedHeader, stageHeader)
		h = append(h, imageHeaders...)
	}
	return h
}

// NodeRow is a row of the node table: the node's name, which orders the rows, and its
// cells in NodeColumns.
type NodeRow struct {
	Name  string
	Cells []string
}

// MCNRow is the row of MachineConfigNode m; node, when known, gives the wide image
// columns.
func MCNRow(m *mcfgv1.MachineConfigNode, node *corev1.Node, wide bool, now time.Time) NodeRow {
	current := ""
	if m.Status.ConfigVersion != nil {
		current = m.Status.ConfigVersion.Current
	}
	cells := []string{m.Name, m.Spec.Pool.Name, m.Spec.ConfigVersion.Desired, current,
		mcnCondition(m, mcfgv1.MachineConfigNodeUpdated), Age(m.CreationTimestamp, now)}
	if wide {
		for _, c := range nodeWide {
			cells = append(cells, mcnCondition(m, c.cond))
		}
		cells = append(cells, pinned.NodeSummary(m), stageCell(node, m))
		cells = append(cells, imageCells(node)...)
	}
	return NodeRow{m.Name, cells}
}

// UnlistedRow is the row of node n of pool, which has no MachineConfigNode: from its
// annotations, the phase cells empty.
func UnlistedRow(n *corev1.Node, pool string, wide bool, now time.Time) NodeRow {
	cells := []string{n.Name, pool, nodeanno.Desired(n), nodeanno.Current(n), "", Age(n.CreationTimestamp, now)}
	if wide {
		cells = append(cells, make([]string, len(nodeWide)+1)...)
		cells = append(cells, stageCell(n, nil))
		cells = append(cells, imageCells(n)...)
	}
	return NodeRow{n.Name, cells}
}

func stageCell(n *corev1.Node, m *mcfgv1.MachineConfigNode) string {
	if n == nil {
		return ""
	}
	_, text := rollout.NodeStage(n, m)
	return text
}

func imageCells(n *corev1.Node) []string {
	if n == nil {
		return []string{"", ""}
	}
	return []string{nodeanno.DesiredImage(n), nodeanno.CurrentImage(n)}
}

// SortRows orders rows by node name.
func SortRows(rows []NodeRow) {
	slices.SortStableFunc(rows, func(a, b NodeRow) int { return cmp.Compare(a.Name, b.Name) })
}

func mcnCondition(m *mcfgv1.MachineConfigNode, t mcfgv1.StateProgress) string {
	for _, c := range m.Status.Conditions {
		if c.Type == string(t) {
			return string(c.Status)
		}
	}
	return ""
}

// Age is kubectl's AGE: a human duration since t, "<unknown>" without a time.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
