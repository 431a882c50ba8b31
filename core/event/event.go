// Package event decides when a Kubernetes Event happened. An Event's writer sets one of
// several times: the old core/v1 recorder lastTimestamp and firstTimestamp, the
// events.k8s.io/v1 recorder eventTime (and a series), and the API server always stamps
// creationTimestamp. Every screen that lists or sorts Events (the TUI's describe, its
// events table, its Events read) asks here, so that one Event is never two ages apart.
package event

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// LastSeen is when e last happened: lastTimestamp, else eventTime, else its creation.
func LastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// FirstSeen is when e first happened, for a repeated event's "over" span:
// firstTimestamp, else its creation.
func FirstSeen(e corev1.Event) time.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// SortOldestFirst sorts evs in place by LastSeen, oldest first; events seen at the
// same time keep their order.
func SortOldestFirst(evs []corev1.Event) {
	slices.SortStableFunc(evs, func(a, b corev1.Event) int { return LastSeen(a).Compare(LastSeen(b)) })
}
