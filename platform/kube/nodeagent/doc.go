// Package nodeagent is the on-host agent's view of the cluster, scoped to its one node:
// NodeAgent reads the Node and its MachineConfigNode from informers that watch only
// those two objects, the MachineConfigs and node disruption policy it applies, and
// writes the annotations and cordon, a drain through k8s.io/kubectl/pkg/drain that names
// the pods and PodDisruptionBudgets blocking it, the MachineConfigNode conditions that
// report its progress, and Events on its Node.
//
// Reads that decide a write (cordon, uncordon, the conditions) go to the API server, not
// the informer cache, and writes carry the resourceVersion they were decided on, so a
// cache that lags the agent's own writes can never turn a needed write into a no-op.
package nodeagent
