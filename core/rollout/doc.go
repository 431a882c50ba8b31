// Package rollout decides how a MachineConfigPool's rendered config reaches its nodes,
// by the rules of MCO's node controller (pkg/controller/node/node_controller.go and
// status.go, pkg/controller/common/layered_node_state.go):
//
//   - MaxUnavailable scales spec.maxUnavailable (an integer or a percentage, rounded
//     down, at least 1) over the pool's nodes.
//   - Unavailable says whether a node counts against that budget: not Ready, under disk
//     pressure, network unavailable or cordoned; or not Done and not failing. A node
//     whose update failed (Degraded or Unreconcilable) does not count, so it can be
//     given a new target.
//   - Plan computes one step: which nodes get the pool's target now. Candidates are the
//     Ready, schedulable nodes whose desired config differs from the target, ordered by
//     zone (nodes without a zone last), then age, then name; a paused pool gets none.
//     Beyond MCO it offers a canary step, an explicit target and per-node retry, and it
//     explains every node it leaves out.
//   - PoolFor, Members and PlanningView say which pool a node belongs to (a custom
//     pool before worker, as MCO) and how the planner sees a node mcotui never
//     configured.
//   - UpdateTaints keeps MCO's UpdateInProgress:PreferNoSchedule taint on the nodes
//     whose desired config differs from the pool's target.
//   - RollbackPin reads mcotui's rollback pin (the mcotui.io/rollback-to and
//     rollback-from annotations), which keeps a pool on its previous rendered config
//     until its MachineConfigs change or the annotations are removed.
//   - Preview runs Plan wave after wave, assuming each wave completes, and attaches the
//     predicted disruption of every node, for `mcotui rollout POOL` and the TUI.
//   - Status computes the pool status (machine counts and the Updated, Updating,
//     NodeDegraded and Degraded conditions) with MCO's messages, so that `kubectl get
//     mcp` reads the same as on OpenShift.
//   - A Memo remembers what these read of each node object, for a controller that
//     plans a pool of thousands of nodes again at every change of one of them.
//
// The controller writes a step's targets to each node's desiredConfig annotation
// (platform/kube; the node's agent brings its MachineConfigNode's spec in step, as
// MCO's daemon does), and the TUI drives the same steps when no controller holds the
// pool.
//
// Everything here is pure: no API calls and no clock but the time passed in. Image
// mode (the currentImage/desiredImage annotations of on-cluster layering) is outside
// mcotui's scope and ignored.
package rollout
