package phase

import (
	"fmt"
	"strings"
)

// Blocker is a pod whose eviction the API server refused, and why: the
// PodDisruptionBudgets that protect it, or another refusal. The agent reports blockers in
// the Drained condition's message; the TUI shows them in the node's detail.
type Blocker struct {
	Pod     string   // namespace/name
	Budgets []string // namespace/name of each PodDisruptionBudget selecting the pod
	Reason  string   // the API server's refusal, when no budget explains it
}

func (b Blocker) String() string {
	if len(b.Budgets) > 0 {
		return fmt.Sprintf("pod %s is protected by PodDisruptionBudget %s", b.Pod, strings.Join(b.Budgets, ", "))
	}
	return fmt.Sprintf("pod %s cannot be evicted: %s", b.Pod, b.Reason)
}

// DescribeBlockers is the blockers as one sentence for a condition message.
func DescribeBlockers(bs []Blocker) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.String()
	}
	return fmt.Sprintf("%d pod(s) could not be evicted: %s", len(bs), strings.Join(parts, "; "))
}
