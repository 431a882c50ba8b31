package bootimage

import (
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// ArchAnnotation on a MachineSet lists the labels its machines' nodes will carry, for
// the cluster autoscaler, comma separated; kubernetes.io/arch among them names the
// architecture.
const ArchAnnotation = "capacity.cluster-autoscaler.kubernetes.io/labels"

const archLabel = "kubernetes.io/arch="

// rpmArch maps Kubernetes (Go) architecture names to the RPM names stream metadata
// uses.
var rpmArch = map[string]string{
	"amd64":   "x86_64",
	"arm64":   "aarch64",
	"ppc64le": "ppc64le",
	"s390x":   "s390x",
}

// Arch returns the architecture of ms's machines as stream metadata names it (x86_64,
// aarch64, ...), read from kubernetes.io/arch in ArchAnnotation as MCO's
// getArchFromMachineSet does. Without the annotation it is defaultArch, the control
// plane's architecture on a single-architecture cluster; "" on a multi-architecture
// cluster, where MCO skips such a MachineSet.
func Arch(ms *machinev1beta1.MachineSet, defaultArch string) (string, error) {
	return archOf("machineset "+ms.Name, ms.Annotations, defaultArch)
}

// archOf is Arch for any object with annotations (a Cluster API MachineDeployment
// carries the same autoscaler annotation); what names the object for errors.
func archOf(what string, annotations map[string]string, defaultArch string) (string, error) {
	value, ok := annotations[ArchAnnotation]
	if !ok {
		return defaultArch, nil
	}
	for label := range strings.SplitSeq(value, ",") {
		goArch, found := strings.CutPrefix(strings.TrimSpace(label), archLabel)
		if !found {
			continue
		}
		if a, ok := rpmArch[goArch]; ok {
			return a, nil
		}
		return "", fmt.Errorf("%s: annotation %s: kubernetes.io/arch=%s is not one of amd64, arm64, ppc64le, s390x", what, ArchAnnotation, goArch)
	}
	return "", fmt.Errorf("%s: annotation %s=%q has no kubernetes.io/arch label; add kubernetes.io/arch=<amd64|arm64|ppc64le|s390x>", what, ArchAnnotation, value)
}
