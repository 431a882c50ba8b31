// Package model is the TUI's data: the pools, nodes and MachineConfigNodes of one
// cluster, joined by node name and reduced to what the panes draw. Sources (an informer,
// the demo simulation, a test fixture) feed it Events; the root model applies them in
// batches so that a burst of thousands of updates costs one redraw.
//
// The model owns no goroutines and no locks: it is only touched from Bubble Tea's
// Update loop. It never reads a clock of its own; times are API timestamps, and ages are
// computed by the panes from the injected clock.
package model

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kind says which object an Event carries.
type Kind uint8

// Kinds of Event.
const (
	KindPool Kind = iota + 1
	KindNode
	KindMCN
	KindHealth
	// KindMachineConfig is a MachineConfig, rendered or not: the configs pane lists
	// them and the rollout preview diffs rendered ones.
	KindMachineConfig
	// KindMachineConfiguration is MachineConfiguration/cluster: boot image modes and
	// the node disruption policy.
	KindMachineConfiguration
	// KindMachineSet is a Machine API MachineSet, whose boot image the boot images
	// pane compares with the target.
	KindMachineSet
	// KindBootImages is the coreos-bootimages ConfigMap: the target boot images.
	KindBootImages
	// KindKubeletConfig and KindContainerRuntimeConfig generate MachineConfigs of the
	// pools they select: the configs pane lists them with their conditions.
	KindKubeletConfig
	KindContainerRuntimeConfig
	// KindMachineOSConfig, KindMachineOSBuild and KindOSImageStream are image mode's
	// objects and the cluster's OS streams: the builds view draws them.
	KindMachineOSConfig
	KindMachineOSBuild
	KindOSImageStream
	// KindCAPI is a Cluster API object the boot images pane decides MachineDeployments
	// by: a MachineDeployment, an AWS or GCP machine template, a Cluster, an AWSCluster.
	KindCAPI
)

func (k Kind) String() string {
	switch k {
	case KindPool:
		return "MachineConfigPool"
	case KindNode:
		return "Node"
	case KindMCN:
		return "MachineConfigNode"
	case KindHealth:
		return "Health"
	case KindMachineConfig:
		return "MachineConfig"
	case KindMachineConfiguration:
		return "MachineConfiguration"
	case KindMachineSet:
		return "MachineSet"
	case KindBootImages:
		return "ConfigMap"
	case KindKubeletConfig:
		return "KubeletConfig"
	case KindContainerRuntimeConfig:
		return "ContainerRuntimeConfig"
	case KindMachineOSConfig:
		return "MachineOSConfig"
	case KindMachineOSBuild:
		return "MachineOSBuild"
	case KindOSImageStream:
		return "OSImageStream"
	case KindCAPI:
		return "ClusterAPIObject"
	}
	return "Unknown"
}

// Event is one change from a Source: an object added or updated (Deleted false) or
// removed (Deleted true), or a change of the source's connection health. It is a plain
// struct rather than an interface so that a burst of events is one slice without a
// boxed value per event.
//
// The objects are shared with the source (an informer cache) and must not be modified.
type Event struct {
	Kind    Kind
	Deleted bool
	Pool    *mcfgv1.MachineConfigPool
	Node    *corev1.Node
	MCN     *mcfgv1.MachineConfigNode
	Health  Health

	MachineConfig        *mcfgv1.MachineConfig
	MachineConfiguration *operatorv1.MachineConfiguration
	MachineSet           *machinev1beta1.MachineSet
	ConfigMap            *corev1.ConfigMap

	KubeletConfig          *mcfgv1.KubeletConfig
	ContainerRuntimeConfig *mcfgv1.ContainerRuntimeConfig

	MachineOSConfig *mcfgv1.MachineOSConfig
	MachineOSBuild  *mcfgv1.MachineOSBuild
	OSImageStream   *mcfgv1.OSImageStream
	// CAPI is a Cluster API object, read as unstructured (see KindCAPI).
	CAPI *unstructured.Unstructured
}

// CAPIEvent is an added or updated Cluster API object (see KindCAPI).
func CAPIEvent(u *unstructured.Unstructured) Event { return Event{Kind: KindCAPI, CAPI: u} }

// KubeletConfigEvent is an added or updated KubeletConfig.
func KubeletConfigEvent(kc *mcfgv1.KubeletConfig) Event {
	return Event{Kind: KindKubeletConfig, KubeletConfig: kc}
}

// ContainerRuntimeConfigEvent is an added or updated ContainerRuntimeConfig.
func ContainerRuntimeConfigEvent(c *mcfgv1.ContainerRuntimeConfig) Event {
	return Event{Kind: KindContainerRuntimeConfig, ContainerRuntimeConfig: c}
}

// PoolEvent is an added or updated MachineConfigPool.
func PoolEvent(p *mcfgv1.MachineConfigPool) Event { return Event{Kind: KindPool, Pool: p} }

// NodeEvent is an added or updated Node.
func NodeEvent(n *corev1.Node) Event { return Event{Kind: KindNode, Node: n} }

// MCNEvent is an added or updated MachineConfigNode.
func MCNEvent(m *mcfgv1.MachineConfigNode) Event { return Event{Kind: KindMCN, MCN: m} }

// MachineConfigEvent is an added or updated MachineConfig.
func MachineConfigEvent(mc *mcfgv1.MachineConfig) Event {
	return Event{Kind: KindMachineConfig, MachineConfig: mc}
}

// MachineConfigurationEvent is an added or updated MachineConfiguration.
func MachineConfigurationEvent(m *operatorv1.MachineConfiguration) Event {
	return Event{Kind: KindMachineConfiguration, MachineConfiguration: m}
}

// MachineSetEvent is an added or updated MachineSet.
func MachineSetEvent(ms *machinev1beta1.MachineSet) Event {
	return Event{Kind: KindMachineSet, MachineSet: ms}
}

// BootImagesEvent is an added or updated coreos-bootimages ConfigMap.
func BootImagesEvent(cm *corev1.ConfigMap) Event { return Event{Kind: KindBootImages, ConfigMap: cm} }

// HealthEvent reports the source's connection health.
func HealthEvent(h Health) Event { return Event{Kind: KindHealth, Health: h} }

// Deleted is the removal of an object; only its name is read.
func Deleted(e Event) Event { e.Deleted = true; return e }

// Name is the name of the object the event carries ("" for none), as the Store keys it:
// a subscriber that coalesces events per object (tui/source's Subscription) keys them
// by Kind and Name too.
func (e Event) Name() string {
	switch e.Kind {
	case KindPool:
		if e.Pool != nil {
			return e.Pool.Name
		}
	case KindNode:
		if e.Node != nil {
			return e.Node.Name
		}
	case KindMCN:
		if e.MCN != nil {
			return e.MCN.Name
		}
	case KindMachineConfig:
		if e.MachineConfig != nil {
			return e.MachineConfig.Name
		}
	case KindMachineConfiguration:
		if e.MachineConfiguration != nil {
			return e.MachineConfiguration.Name
		}
	case KindMachineSet:
		if e.MachineSet != nil {
			return e.MachineSet.Name
		}
	case KindBootImages:
		if e.ConfigMap != nil {
			return e.ConfigMap.Name
		}
	case KindKubeletConfig:
		if e.KubeletConfig != nil {
			return e.KubeletConfig.Name
		}
	case KindContainerRuntimeConfig:
		if e.ContainerRuntimeConfig != nil {
			return e.ContainerRuntimeConfig.Name
		}
	case KindMachineOSConfig:
		if e.MachineOSConfig != nil {
			return e.MachineOSConfig.Name
		}
	case KindMachineOSBuild:
		if e.MachineOSBuild != nil {
			return e.MachineOSBuild.Name
		}
	case KindOSImageStream:
		if e.OSImageStream != nil {
			return e.OSImageStream.Name
		}
	case KindCAPI:
		if e.CAPI != nil && e.CAPI.GetName() != "" {
			return capiKey(e.CAPI.GetKind(), e.CAPI.GetNamespace(), e.CAPI.GetName())
		}
	}
	return ""
}

// Connection is the state of a source's link to its cluster.
type Connection uint8

// Connection states.
const (
	// Connecting: the source has not synced yet.
	Connecting Connection = iota
	// Connected: the watches are up and the caches synced.
	Connected
	// Degraded: the source is up but a watch is failing (Err says why) and what is shown
	// may be stale; the informers keep retrying, so the status line says
	// "reconnecting".
	Degraded
	// Disconnected: the source stopped; nothing shown will change any more.
	Disconnected
)

func (c Connection) String() string {
	return [...]string{"connecting", "connected", "reconnecting", "disconnected"}[c]
}

// Health is what the status line says about the source.
type Health struct {
	State Connection
	Err   string    // the last error, when Degraded or Disconnected
	Since time.Time // when State began, from the source's clock
}
