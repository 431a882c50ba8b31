// Package kube is mcotui's adapter to the Kubernetes API: clients, informers, drain,
// and status writers for mcotui.
//
// RESTConfig loads credentials the way kubectl does and Clients bundles the typed
// clientsets of every API mcotui speaks (core, machineconfiguration.openshift.io,
// operator.openshift.io, machine.openshift.io) for the controller and the TUI.
//
// NodeAgent is the on-host agent's view of the cluster, scoped to its one node: the
// Node and its MachineConfigNode from informers that watch only those two objects, the
// MachineConfigs and node disruption policy it applies, the annotations and cordon it
// writes, a drain through k8s.io/kubectl/pkg/drain that names the pods and
// PodDisruptionBudgets blocking it, the MachineConfigNode conditions that report its
// progress, and Events on its Node.
//
// Reads that decide a write (cordon, uncordon, the conditions) go to the API server, not
// the informer cache, and writes carry the resourceVersion they were decided on, so a
// cache that lags the agent's own writes can never turn a needed write into a no-op.
package kube
