package controller

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/core/rollout"
)

// setStreamStatus sets status.osImageStream from the pool's just computed conditions
// and configuration (osstream.PoolStatus), where the driver has the caches to. A
// rendered or source config missing from the cache leaves the stream unreported, as
// MCO leaves it when its lister misses them.
func (d *driver) setStreamStatus(status *mcfgv1.MachineConfigPoolStatus) {
	if d.streams == nil {
		return
	}
	isTrue := func(t mcfgv1.MachineConfigPoolConditionType) bool {
		c := rollout.FindCondition(status, t)
		return c != nil && c.Status == corev1.ConditionTrue
	}
	var rendered *mcfgv1.MachineConfig
	if name := status.Configuration.Name; name != "" {
		rendered, _ = d.mcs.Get(name)
	}
	var sources []*mcfgv1.MachineConfig
	for _, ref := range status.Configuration.Source {
		if mc, err := d.mcs.Get(ref.Name); err == nil {
			sources = append(sources, mc)
		}
	}
	streams, _ := d.streams.Get(osstream.SingletonName)
	status.OSImageStream = osstream.PoolStatus(isTrue(mcfgv1.MachineConfigPoolUpdated), isTrue(mcfgv1.MachineConfigPoolDegraded), rendered, sources, streams)
}
