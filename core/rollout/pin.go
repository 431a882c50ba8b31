package rollout

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// A rollback pin: MCO rolls back by re-rendering once the MachineConfig that caused a
// change is removed. mcotui also lets an administrator take a pool back to its
// previous rendered config without touching the MachineConfigs, by two pool
// annotations that the controller's render loop honours: while RollbackToAnnotation
// names a rendered config and the pool's MachineConfigs still render to the config
// named by RollbackFromAnnotation, spec.configuration stays on the former, and the
// rollout takes every node back to it. Removing the annotations, or any change to the
// pool's MachineConfigs (which renders something else than RollbackFrom), ends the
// pin: the pool rolls forward to what its MachineConfigs render to.
const (
	RollbackToAnnotation   = "mcotui.io/rollback-to"
	RollbackFromAnnotation = "mcotui.io/rollback-from"
)

// RollbackPin says whether the pool is pinned to a rendered config by a rollback, given
// rendered, the config its MachineConfigs render to now: to is the config to keep
// spec.configuration on ("" for none); stale reports a pin whose sources have changed
// since it was set (or that lacks its rollback-from), which should be removed.
func RollbackPin(pool *mcfgv1.MachineConfigPool, rendered string) (to string, stale bool) {
	to = pool.Annotations[RollbackToAnnotation]
	from := pool.Annotations[RollbackFromAnnotation]
	switch {
	case to == "" && from == "":
		return "", false
	case to == "" || from == "" || from != rendered:
		return "", true
	}
	return to, false
}
