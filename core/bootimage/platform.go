package bootimage

import (
	"encoding/json"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// Labels that mark a control plane node: the current one and the one clusters
// installed before Kubernetes 1.20 still carry.
const (
	controlPlaneLabel = "node-role.kubernetes.io/control-plane"
	masterLabel       = "node-role.kubernetes.io/master"
)

// InferPlatform is the platform every MachineSet's providerSpec names (AWS for
// AWSMachineProviderConfig, GCP for GCPMachineProviderSpec), or "" (no platform, whose
// default mode is None) when there are none, they disagree or one names another. It
// stands in for Infrastructure/cluster on clusters that have none.
func InferPlatform(machineSets []*machinev1beta1.MachineSet) configv1.PlatformType {
	var found configv1.PlatformType
	for _, ms := range machineSets {
		p := PlatformOf(ms)
		if p == "" || (found != "" && p != found) {
			return ""
		}
		found = p
	}
	return found
}

// ClusterPlatform is the platform whose default mode applies to Machine API MachineSets:
// the cluster's Infrastructure platform when it has one, else the one its MachineSets
// name (InferPlatform). The controller and the TUI both decide by it.
func ClusterPlatform(infrastructure configv1.PlatformType, machineSets []*machinev1beta1.MachineSet) configv1.PlatformType {
	if infrastructure != "" {
		return infrastructure
	}
	return InferPlatform(machineSets)
}

// PlatformOf is the platform ms's providerSpec kind names, or "" for a kind this
// package does not reconcile (or no providerSpec at all).
func PlatformOf(ms *machinev1beta1.MachineSet) configv1.PlatformType {
	v := ms.Spec.Template.Spec.ProviderSpec.Value
	if v == nil {
		return ""
	}
	var meta struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(v.Raw, &meta) != nil {
		return ""
	}
	switch meta.Kind {
	case "AWSMachineProviderConfig":
		return configv1.AWSPlatformType
	case "GCPMachineProviderSpec":
		return configv1.GCPPlatformType
	}
	return ""
}

// DefaultArch is the architecture of MachineSets that name none (see Arch), as stream
// metadata names it: that of the control plane nodes (node-role.kubernetes.io/
// control-plane or master) when they agree, because MCO takes the control plane's
// architecture as the cluster's; of all nodes when none is labelled so (a kubeadm
// cluster whose control plane is not a node), when they agree; "" otherwise, as on a
// multi-architecture cluster, where such MachineSets are skipped. Workers of another
// architecture beside a single-architecture control plane do not make it "".
func DefaultArch(nodes []*corev1.Node) string {
	pick := func(controlPlaneOnly bool) string {
		arch := ""
		for _, n := range nodes {
			if n == nil {
				continue
			}
			_, cp := n.Labels[controlPlaneLabel]
			_, master := n.Labels[masterLabel]
			if controlPlaneOnly && !cp && !master {
				continue
			}
			a := rpmArch[n.Labels[corev1.LabelArchStable]]
			if a == "" || (arch != "" && a != arch) {
				return ""
			}
			arch = a
		}
		return arch
	}
	if a := pick(true); a != "" {
		return a
	}
	return pick(false)
}
