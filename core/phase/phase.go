// Package phase is the model of one node's update as MCO shows it: the MachineConfigNode
// condition types, their parent and child relations, the reasons and message styles, and
// the rules MCO applies when a condition is written (see MCO's
// pkg/upgrademonitor/upgrade_monitor.go). The agent writes conditions through it, the TUI
// reads them through it, and so both agree with MCO on what each status means.
package phase

import (
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types, as in openshift/api.
const (
	UpdatePrepared           = mcfgv1.MachineConfigNodeUpdatePrepared
	UpdateExecuted           = mcfgv1.MachineConfigNodeUpdateExecuted
	Cordoned                 = mcfgv1.MachineConfigNodeUpdateCordoned
	Drained                  = mcfgv1.MachineConfigNodeUpdateDrained
	AppliedFilesAndOS        = mcfgv1.MachineConfigNodeUpdateFilesAndOS
	UpdatePostActionComplete = mcfgv1.MachineConfigNodeUpdatePostActionComplete
	RebootedNode             = mcfgv1.MachineConfigNodeUpdateRebooted
	UpdateComplete           = mcfgv1.MachineConfigNodeUpdateComplete
	Uncordoned               = mcfgv1.MachineConfigNodeUpdateUncordoned
	Updated                  = mcfgv1.MachineConfigNodeUpdated
	Resumed                  = mcfgv1.MachineConfigNodeResumed
	NodeDegraded             = mcfgv1.MachineConfigNodeNodeDegraded
)

// Columns are the phases in the order a node passes through them, as the TUI's grid and
// `mcotui status -o wide` show them.
var Columns = []mcfgv1.StateProgress{
	UpdatePrepared, Cordoned, Drained, AppliedFilesAndOS, UpdatePostActionComplete,
	RebootedNode, Uncordoned, Updated, Resumed, NodeDegraded,
}

// all is every type MCO creates on a new MachineConfigNode, in MCO's order, so that a
// MachineConfigNode written by mcotui lists the same conditions as one written by MCO.
var all = []mcfgv1.StateProgress{
	UpdatePrepared, UpdateExecuted, UpdatePostActionComplete, UpdateComplete, Resumed,
	Drained, AppliedFilesAndOS, mcfgv1.MachineConfigNodeImagePulledFromRegistry, Cordoned,
	RebootedNode, Updated, Uncordoned, NodeDegraded,
	mcfgv1.MachineConfigNodePinnedImageSetsDegraded, mcfgv1.MachineConfigNodePinnedImageSetsProgressing,
}

// Parent returns the parent of a child condition type (Cordoned, Drained and
// AppliedFilesAndOS belong to UpdateExecuted; Uncordoned to UpdateComplete).
func Parent(t mcfgv1.StateProgress) (mcfgv1.StateProgress, bool) {
	switch t {
	case Cordoned, Drained, AppliedFilesAndOS:
		return UpdateExecuted, true
	case Uncordoned:
		return UpdateComplete, true
	}
	return "", false
}

// Reason is the reason MCO gives a condition of type t: the type itself for a parent,
// "<Parent><Child>" for a child (UpdateExecutedDrained).
func Reason(t mcfgv1.StateProgress) string {
	if p, ok := Parent(t); ok {
		return string(p) + string(t)
	}
	return string(t)
}

// Condition is a condition to write: a type, a status and a message. The reason follows
// from the type unless set.
type Condition struct {
	Type    mcfgv1.StateProgress
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

func (c Condition) reason() string {
	if c.Reason != "" {
		return c.Reason
	}
	return Reason(c.Type)
}

// Initial is the condition list of a new MachineConfigNode: every type False,
// "NotYetOccurred".
func Initial(now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(all))
	for _, t := range all {
		out = append(out, metav1.Condition{
			Type:               string(t),
			Status:             metav1.ConditionFalse,
			Reason:             "NotYetOccurred",
			Message:            fmt.Sprintf("This node has not yet entered the %s phase", t),
			LastTransitionTime: now,
		})
	}
	return out
}

// Apply writes conds (a parent and optionally its child) into existing, following MCO's
// rules, and returns the new list and whether anything changed:
//   - writing Updated resets every other condition that is not False (but the two
//     PinnedImageSets ones, and ImagePulledFromRegistry, which the staging of the next
//     OS image writes ahead of an update, while the node is Updated) to False, its
//     message prefixed "Action during update to <desired>: ";
//   - writing any other type while Updated is True sets Updated False, "sensed
//     disruption via a manual update" (but ImagePulledFromRegistry alone: staging the
//     next OS image before the drain changes nothing on the running node);
//   - a condition whose status, reason and message are unchanged keeps its transition
//     time, so repeating a write changes nothing.
//
// existing is not modified.
func Apply(existing []metav1.Condition, desired string, now metav1.Time, conds ...Condition) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, len(existing))
	copy(out, existing)
	if len(out) == 0 {
		out = Initial(now)
	}
	changed := false
	writing := map[string]bool{}
	for _, c := range conds {
		writing[string(c.Type)] = true
	}
	resetAll := writing[string(Updated)]
	for i := range out {
		c := &out[i]
		switch {
		case writing[c.Type]:
			continue
		case c.Type == string(Updated) && c.Status == metav1.ConditionTrue && !stagingOnly(writing):
			*c = metav1.Condition{
				Type: string(Updated), Status: metav1.ConditionFalse, Reason: string(Updated),
				Message:            "This node is not updated, sensed disruption via a manual update.",
				LastTransitionTime: now,
			}
			changed = true
		case resetAll && c.Status != metav1.ConditionFalse && !pinnedImages(c.Type) && c.Type != string(ImagePulledFromRegistry):
			c.Status = metav1.ConditionFalse
			c.Message = fmt.Sprintf("Action during update to %s: %s", desired, c.Message)
			c.LastTransitionTime = now
			changed = true
		}
	}
	for _, w := range conds {
		nc := metav1.Condition{Type: string(w.Type), Status: w.Status, Reason: w.reason(), Message: w.Message, LastTransitionTime: now}
		i := index(out, nc.Type)
		if i < 0 {
			out = append(out, nc)
			changed = true
			continue
		}
		old := out[i]
		if old.Status == nc.Status && old.Reason == nc.Reason && old.Message == nc.Message {
			continue
		}
		out[i] = nc
		changed = true
	}
	return out, changed
}

// pinnedImages says whether t is one of the PinnedImageSets conditions, which the
// pinned-image work writes independently of updates (core/pinned): an update ending
// says nothing about the images, so Updated does not reset them (MCO's writer does,
// and so loses a PinnedImageSetsDegraded until the next prefetch).
func pinnedImages(t string) bool {
	return t == string(mcfgv1.MachineConfigNodePinnedImageSetsDegraded) || t == string(mcfgv1.MachineConfigNodePinnedImageSetsProgressing)
}

func index(conds []metav1.Condition, t string) int {
	for i, c := range conds {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// Find returns the condition of type t.
func Find(conds []metav1.Condition, t mcfgv1.StateProgress) (metav1.Condition, bool) {
	if i := index(conds, string(t)); i >= 0 {
		return conds[i], true
	}
	return metav1.Condition{}, false
}

// State is what a condition means to someone watching the node: the TUI draws one glyph
// per state.
type State int

const (
	// NotStarted: False. The phase has not happened in this update, or is not needed.
	NotStarted State = iota
	// InProgress: Unknown, and the message does not report a failure.
	InProgress
	// Failed: Unknown with a failure message, or NodeDegraded True.
	Failed
	// Done: True.
	Done
)

func (s State) String() string {
	return [...]string{"NotStarted", "InProgress", "Failed", "Done"}[s]
}

// StateOf classifies a condition. MCO uses Unknown both for "in progress" and for
// "failed"; the message tells them apart ("Error: ...", "... Failed ...").
func StateOf(c metav1.Condition) State {
	if c.Type == string(NodeDegraded) {
		if c.Status == metav1.ConditionTrue {
			return Failed
		}
		return NotStarted
	}
	switch c.Status {
	case metav1.ConditionTrue:
		return Done
	case metav1.ConditionUnknown:
		if failureMessage(c.Message) {
			return Failed
		}
		return InProgress
	}
	return NotStarted
}

func failureMessage(m string) bool {
	return strings.HasPrefix(m, "Error") || strings.Contains(m, "Failed") || strings.Contains(m, "failed")
}
