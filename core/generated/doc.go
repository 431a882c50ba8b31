// Package generated turns the two MCO inputs that are not MachineConfigs, KubeletConfig
// and ContainerRuntimeConfig (machineconfiguration.openshift.io/v1), into the
// MachineConfigs MCO's kubelet-config and container-runtime-config controllers make
// from them: `99-<pool>-generated-kubelet` and `99-<pool>-generated-containerruntime`
// (then `-1` to `-9` for more objects on the same pool), with MCO's validation rules
// and messages. It is pure: the controller (controller/generate.go) and the offline
// `mcotui render` feed it what they read.
//
// Where MCO's output only makes sense on OpenShift's hosts (the node sizing script,
// the kubelet unit's KUBELET_LOG_LEVEL variable), this package writes what a stock
// kubelet reads instead, or refuses the field with a message that says so, rather
// than writing files nothing reads.
package generated
