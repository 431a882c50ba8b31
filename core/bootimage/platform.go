package bootimage

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
// AWSMachineProviderConfig, GCP for GCPMachineProviderSpec, Azure for
// AzureMachineProviderSpec, vSphere for VSphereMachineProviderSpec), or "" (no platform, whose
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
	case "AzureMachineProviderSpec":
		return configv1.AzurePlatformType
	case "VSphereMachineProviderSpec":
		return configv1.VSpherePlatformType
	}
	return ""
}

// DefaultArch is the architecture of MachineSets that name none (see Arch), as stream
// metadata names it; see ClusterArch.
func DefaultArch(nodes []*corev1.Node) string {
	arch, _ := ClusterArch(nodes)
	return arch
}

// ClusterArch is the architecture of MachineSets that name none, as stream metadata
// names it: MCO takes the control plane's (that of the machine-config controller, which
// runs there). Here it is that of the control plane nodes (node-role.kubernetes.io/
// control-plane or master) when they agree; of all nodes when none is labelled so (a
// kubeadm cluster whose control plane is not a node), when they agree. A node's
// architecture is its kubernetes.io/arch label, or else the status.nodeInfo.architecture
// its kubelet reports; nodes that give neither are left out. Workers of another
// architecture beside a single-architecture control plane do not change it.
//
// When there is none, missing says why in a sentence, for the MachineSet's skip: the
// control plane (or the cluster) has several architectures, or no node says its own.
func ClusterArch(nodes []*corev1.Node) (arch, missing string) {
	pick := func(controlPlaneOnly bool) (arch string, several []string, counted int) {
		seen := map[string]bool{}
		for _, n := range nodes {
			if n == nil {
				continue
			}
			_, cp := n.Labels[controlPlaneLabel]
			_, master := n.Labels[masterLabel]
			if controlPlaneOnly && !cp && !master {
				continue
			}
			counted++
			goArch := n.Labels[corev1.LabelArchStable]
			if goArch == "" {
				goArch = n.Status.NodeInfo.Architecture
			}
			a := rpmArch[goArch]
			if a == "" {
				continue
			}
			seen[a] = true
		}
		names := slices.Sorted(maps.Keys(seen))
		if len(names) == 1 {
			return names[0], nil, counted
		}
		return "", names, counted
	}
	a, several, cps := pick(true)
	switch {
	case a != "":
		return a, ""
	case len(several) > 1:
		return "", fmt.Sprintf("the control plane nodes have several architectures (%s)", strings.Join(several, ", "))
	}
	a, several, all := pick(false)
	switch {
	case a != "":
		return a, ""
	case len(several) > 1 && cps == 0:
		return "", fmt.Sprintf("no node is labelled %s and the nodes have several architectures (%s)", controlPlaneLabel, strings.Join(several, ", "))
	case len(several) > 1:
		return "", fmt.Sprintf("the control plane nodes say no architecture and the other nodes have several (%s)", strings.Join(several, ", "))
	case all == 0:
		return "", "the cluster has no nodes to take the control plane's architecture from"
	}
	return "", fmt.Sprintf("no node says its architecture (no %s label, no status.nodeInfo.architecture of amd64, arm64, ppc64le or s390x), so the control plane's, MCO's default, is unknown", corev1.LabelArchStable)
}
