package cluster

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// writeDrainForecast prints the plan's drain forecast (drainforecast.Check): each node
// whose drain blocks or loses data, and the room for the pods of the maxUnavailable
// busiest nodes. A forecast it cannot read (no right to list pods) is a warning on
// errOut: the plan stands without it.
func writeDrainForecast(ctx context.Context, w, errOut io.Writer, c *kube.Clients, f rollout.Forecast, members []*corev1.Node) {
	draining := drainforecast.Draining(f)
	if len(draining) == 0 {
		return
	}
	in, err := kube.DrainInput(ctx, c, members, draining, f.MaxUnavailable)
	if err != nil {
		fmt.Fprintf(errOut, "Warning: no drain forecast: %v\n", err)
		return
	}
	rep := drainforecast.Check(in)
	if len(rep.Risks) == 0 && !rep.Capacity.Short {
		fmt.Fprintf(w, "Drain forecast: %d node(s) drain; none blocks or loses data; %s.\n\n", len(draining), rep.Capacity)
		return
	}
	fmt.Fprintf(w, "Drain forecast: %d node(s) drain; %d will block:\n", len(draining), len(rep.Blocking()))
	for _, r := range rep.Risks {
		fmt.Fprintf(w, "  %s: %s\n", r.Node, r)
	}
	if s := rep.Capacity.String(); s != "" {
		fmt.Fprintf(w, "  capacity: %s\n", s)
	}
	fmt.Fprintln(w)
}
