package rollout

import (
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// NodePhase names where node n is in its update to target, as a follower of the
// rollout shows it: Degraded (with the reason), Waiting (not targeted yet), Updated, the
// last phase its MachineConfigNode mcn (nil when it has none) reports done or in
// progress, else Working or Targeted from the node's annotations.
func NodePhase(n *corev1.Node, mcn *mcfgv1.MachineConfigNode, target string) string {
	switch {
	case Degraded(n):
		return fmt.Sprintf("Degraded (%s)", nodeanno.Reason(n))
	case nodeanno.Desired(n) != target:
		if st, text := NodeStage(n, mcn); st != StageNone {
			return "Waiting (" + text + ")"
		}
		return "Waiting"
	case DoneAt(n, target):
		return "Updated"
	}
	if mcn != nil && mcn.Spec.ConfigVersion.Desired == target {
		last := ""
		for _, t := range phase.Columns {
			if t == phase.Updated || t == phase.Resumed || t == phase.NodeDegraded {
				continue
			}
			c, ok := phase.Find(mcn.Status.Conditions, t)
			switch {
			case !ok || c.Status == metav1.ConditionFalse:
			case c.Status == metav1.ConditionUnknown:
				last = string(t) + " (in progress)"
			default:
				last = string(t)
			}
		}
		if last != "" {
			return last
		}
	}
	if nodeanno.State(n) == nodeanno.StateWorking {
		return "Working"
	}
	return "Targeted"
}

// ProgressBar draws "[######--------------] 3/10 nodes updated to X".
func ProgressBar(done, total int, target string) string {
	const width = 20
	filled := 0
	if total > 0 {
		filled = done * width / total
	}
	return fmt.Sprintf("[%s%s] %d/%d nodes updated to %s", strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total, target)
}

// ToUpdate is the number of nodes the forecast's waves will update.
func (f Forecast) ToUpdate() int {
	n := 0
	for _, w := range f.Waves {
		n += len(w.Nodes)
	}
	return n
}

// Updating is the number of a pool's nodes (nodes in all) that are on their way to
// the target already, targeted and their agents at work: neither at the target, nor
// in a wave, nor blocked.
func (f Forecast) Updating(nodes int) int {
	return nodes - len(f.AtTarget) - f.ToUpdate() - len(f.Blocked)
}
