package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui/action"
)

// DrainForecast implements action.DrainForecast with the reads and the rule of
// `mcotui rollout POOL` (kube.DrainInput, drainforecast.Check): one list of each kind
// when asked, no informer (a cluster's pods are many times its nodes, and a preview
// is opened now and then).
func (c *Cluster) DrainForecast(ctx context.Context, members []*corev1.Node, draining []string, maxUnavailable int) (drainforecast.Report, error) {
	in, err := kube.DrainInput(ctx, c.clients, members, draining, maxUnavailable)
	if err != nil {
		return drainforecast.Report{}, err
	}
	return drainforecast.Check(in), nil
}

var _ action.DrainForecast = (*Cluster)(nil)
