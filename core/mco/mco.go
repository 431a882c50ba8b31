// Package mco names the Machine Config Operator's own objects on OpenShift: where it
// runs. mcotui's agent and controller must not run beside it (platform/kube's DetectMCO
// looks for them), and the install manifests grant the controller the right to look
// (deploy). Pure names, so that deploy need not import a cluster adapter for them.
package mco

// Where the Machine Config Operator runs on OpenShift.
const (
	Namespace       = "openshift-machine-config-operator"
	Deployment      = "machine-config-operator"
	DaemonSet       = "machine-config-daemon"
	ClusterOperator = "machine-config"
)
