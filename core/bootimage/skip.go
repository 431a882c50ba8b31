package bootimage

import (
	"fmt"
	"strings"
)

// SkipReason says why a MachineSet's boot image is left alone.
type SkipReason string

// Reasons a MachineSet is skipped. MCO logs these and counts the MachineSet as
// reconciled; mcotui names them too.
const (
	// SkipOwnerReference: another object owns the MachineSet.
	SkipOwnerReference SkipReason = "OwnerReference"
	// SkipClusterClass: a Cluster API MachineDeployment managed by its Cluster's
	// topology, whose ClusterClass names the template.
	SkipClusterClass SkipReason = "ClusterClassManaged"
	// SkipWindows: the MachineSet makes Windows machines.
	SkipWindows SkipReason = "Windows"
	// SkipCustomImage: the MachineSet boots an image that is not a known RHCOS image.
	SkipCustomImage SkipReason = "CustomImage"
	// SkipNoAMIID: an AWS MachineSet gives its AMI by ARN or filters, not by ID.
	SkipNoAMIID SkipReason = "NoAMIID"
	// SkipNoRegionImage: the stream metadata has no AMI for the MachineSet's region.
	SkipNoRegionImage SkipReason = "NoRegionImage"
	// SkipNoBootDisk: a GCP MachineSet has no disk marked boot.
	SkipNoBootDisk SkipReason = "NoBootDisk"
	// SkipNoArchitecture: the MachineSet names no architecture and the cluster has
	// no default (a multi-architecture cluster).
	SkipNoArchitecture SkipReason = "NoArchitecture"
	// SkipUnsupportedPlatform: boot images are only managed on AWS, GCP, Azure and
	// vSphere.
	SkipUnsupportedPlatform SkipReason = "UnsupportedPlatform"
	// SkipUnsupportedArch: an Azure MachineSet of ppc64le or s390x.
	SkipUnsupportedArch SkipReason = "UnsupportedArchitecture"
	// SkipSecurityType: an Azure MachineSet with a security type (trusted launch,
	// confidential VM).
	SkipSecurityType SkipReason = "SecurityType"
	// SkipNoMarketplace: the stream metadata has no Azure marketplace images (OKD).
	SkipNoMarketplace SkipReason = "NoMarketplaceImages"
	// SkipNoVCenter: a vSphere MachineSet, whose new boot image is a template made in
	// vCenter from the stream's OVA; mcotui does not reach vCenter.
	SkipNoVCenter SkipReason = "NoVCenter"
	// SkipNoTemplate: no vSphere template of the stream's release exists yet.
	SkipNoTemplate SkipReason = "NoTemplate"
)

// LeavesSkew says whether a MachineSet skipped for this reason may still boot an old
// image, so that the cluster's boot image version can no longer be taken as the
// stream's: MCO's reconcileSkipped. Windows MachineSets, unsupported platforms and
// Azure's architectures and security types are excluded on purpose, as MCO excludes
// them, and do not count.
func (r SkipReason) LeavesSkew() bool {
	switch r {
	case SkipWindows, SkipOSStream, SkipUnsupportedPlatform, SkipUnsupportedArch, SkipSecurityType:
		return false
	}
	return true
}

// Skip is a MachineSet left alone, and why.
type Skip struct {
	MachineSet string
	Reason     SkipReason
	Message    string
}

func (s Skip) String() string { return fmt.Sprintf("%s: %s", s.MachineSet, s.Message) }

// Summary names skipped MachineSets in one line for people: "2 skipped: a (owned by
// ...), b (...)"; "" when none are.
func Summary(skipped []Skip) string {
	if len(skipped) == 0 {
		return ""
	}
	parts := make([]string, len(skipped))
	for i, s := range skipped {
		parts[i] = fmt.Sprintf("%s (%s)", s.MachineSet, s.Message)
	}
	return fmt.Sprintf("%d skipped: %s", len(skipped), strings.Join(parts, ", "))
}
