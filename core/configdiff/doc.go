// Package configdiff compares two rendered MachineConfigs the way a node sees them: what
// the on-host agent must write, remove, enable, mask or rebase to go from the old config
// to the new one (Compute), and whether a running node can make that change at all
// (Reconcilable).
//
// The rules follow the Machine Config Operator's daemon so that a pool behaves the same
// under mcotui as under MCO: files are keyed by path, units and drop-ins by name, only the
// core user's SSH keys and password hash can change in place, and the Ignition storage
// layout, groups, other users and FIPS are fixed once a node is provisioned (MCO's
// pkg/controller/common/reconcile.go isConfigReconcilable and pkg/daemon/update.go
// newMachineConfigDiff). Where mcotui deliberately differs, the comment at the rule says
// so and why.
//
// Everything here is pure: no I/O, no clocks. The agent, the controller, the TUI and the
// offline `mcotui diff` command all call the same functions, so a preview and the update
// it predicts cannot disagree.
package configdiff
