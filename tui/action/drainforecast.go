package action

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/drainforecast"
)

// DrainForecast reads what a pool's drains will meet (the pods on its members, the
// PodDisruptionBudgets, claims and volumes they use) and forecasts with
// drainforecast.Check, the rule `mcotui rollout POOL` prints: a read, offered to
// read-only sessions too. members are the pool's nodes, draining those whose update
// drains them (drainforecast.Draining), maxUnavailable how many are cordoned at once.
// The error names what could not be read (a forbidden list of pods among them).
type DrainForecast interface {
	DrainForecast(ctx context.Context, members []*corev1.Node, draining []string, maxUnavailable int) (drainforecast.Report, error)
}
