package model

import (
	"strings"

	"github.com/mcotui/mcotui/core/phase"
)

// ParseBlockers reads the pods and budgets holding a drain back out of a Drained
// condition message written with phase.DrainFailed(phase.DescribeBlockers(bs)):
//
//	Error: Node Drain has not succeeded. Error is: 1 pod(s) could not be evicted: pod default/web-0 is protected by PodDisruptionBudget default/web
//
// The condition message is the only place the blockers travel (MCO has no structured
// field for them), so the TUI parses the sentence the agent writes. A message in any
// other form (MCO's own drain controller writes kubectl's error text) yields nil; the
// detail pane then shows the message alone.
func ParseBlockers(msg string) []phase.Blocker {
	const marker = "could not be evicted: "
	i := strings.Index(msg, marker)
	if i < 0 {
		return nil
	}
	var out []phase.Blocker
	for _, part := range strings.Split(msg[i+len(marker):], "; ") {
		pod, rest, ok := strings.Cut(part, " ")
		if !ok || pod != "pod" {
			// A "; " inside an API server's refusal: it belongs to the previous reason.
			if n := len(out); n > 0 && len(out[n-1].Budgets) == 0 {
				out[n-1].Reason += "; " + part
			}
			continue
		}
		if name, budgets, ok := strings.Cut(rest, " is protected by PodDisruptionBudget "); ok {
			out = append(out, phase.Blocker{Pod: name, Budgets: strings.Split(budgets, ", ")})
			continue
		}
		if name, reason, ok := strings.Cut(rest, " cannot be evicted: "); ok {
			out = append(out, phase.Blocker{Pod: name, Reason: reason})
		}
	}
	return out
}
