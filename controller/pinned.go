package controller

import (
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/pinned"
)

// setPinnedSynchronizer puts the pool's PinnedImageSets synchronizer status into
// status (pinned.Synchronizer over the members' MachineConfigNodes), as MCO's node
// controller does. A pool that names no PinnedImageSets and never had the entry is left
// without it, so pools that do not use the feature keep the status they had; a driver
// without a MachineConfigNode lister (the TUI's) leaves the entry as it was.
func (d *driver) setPinnedSynchronizer(pool *mcfgv1.MachineConfigPool, status *mcfgv1.MachineConfigPoolStatus, view []*corev1.Node) {
	if d.mcns == nil {
		return
	}
	i := slices.IndexFunc(status.PoolSynchronizersStatus, func(s mcfgv1.PoolSynchronizerStatus) bool {
		return s.PoolSynchronizerType == mcfgv1.PinnedImageSets
	})
	if i < 0 && len(pool.Spec.PinnedImageSets) == 0 {
		return
	}
	var mcns []*mcfgv1.MachineConfigNode
	for _, n := range view {
		if n == nil {
			continue
		}
		mcn, err := d.mcns.Get(n.Name)
		if err != nil {
			mcn = nil // none yet: not updated
		}
		mcns = append(mcns, mcn)
	}
	s := pinned.Synchronizer(*status, mcns)
	if i < 0 {
		status.PoolSynchronizersStatus = append(status.PoolSynchronizersStatus, s)
		return
	}
	// The CRD forbids observedGeneration moving backwards.
	s.ObservedGeneration = max(s.ObservedGeneration, status.PoolSynchronizersStatus[i].ObservedGeneration)
	status.PoolSynchronizersStatus[i] = s
}
