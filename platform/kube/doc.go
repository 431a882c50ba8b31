// Package kube is mcotui's shared adapter to the Kubernetes API: clients, discovery, the
// detection of a running MCO, leader election on a Lease (Lead, LeaseHolder), the
// reading of pool and node status (ReadStatus) and the one streaming list decoder
// behind it and the TUI's MachineConfigNodes (decodeList), the evidence of a pool's
// health gates (GateEvidence), and the cluster writes that the CLI, the TUI and the
// controller share (TargetNode, SetPoolPaused, SetMaxUnavailable, SetBootImageMode,
// RetryNode, RollBackPool).
//
// RESTConfig loads credentials the way kubectl does and Clients bundles the typed
// clientsets of every API mcotui speaks (core, machineconfiguration.openshift.io,
// operator.openshift.io, machine.openshift.io) for the controller and the TUI.
//
// The agent's view of its one node lives in the nodeagent package below; the real
// control plane for tests in kubetest.
package kube
