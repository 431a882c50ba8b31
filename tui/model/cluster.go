package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/render"
)

// clusterObjects are the objects beside pools and nodes: MachineConfigs,
// MachineConfiguration/cluster, MachineSets and the target boot images. There are tens
// of them, not thousands, and they change rarely, so they are kept as the source gives
// them and the sorted lists are rebuilt whenever one changes.
type clusterObjects struct {
	mcs     map[string]*mcfgv1.MachineConfig
	mcList  []*mcfgv1.MachineConfig
	mcfg    *operatorv1.MachineConfiguration
	sets    map[string]*machinev1beta1.MachineSet
	setList []*machinev1beta1.MachineSet

	kcs  map[string]*mcfgv1.KubeletConfig
	crcs map[string]*mcfgv1.ContainerRuntimeConfig

	// capi are the Cluster API objects by capiKey; mds the MachineDeployments among
	// them, sorted by namespace/name.
	capi map[string]*unstructured.Unstructured
	mds  []*unstructured.Unstructured

	bootImages *corev1.ConfigMap
	// stream is bootImages parsed once per change, not once per frame.
	stream    *bootimage.Stream
	streamErr error
}

func newClusterObjects() clusterObjects {
	return clusterObjects{mcs: map[string]*mcfgv1.MachineConfig{}, sets: map[string]*machinev1beta1.MachineSet{},
		kcs: map[string]*mcfgv1.KubeletConfig{}, crcs: map[string]*mcfgv1.ContainerRuntimeConfig{},
		capi: map[string]*unstructured.Unstructured{}}
}

func (s *Store) applyCluster(e Event, name string, ch *Changes) {
	s.cluster.apply(e, name, ch)
	if ch.Configs {
		s.diffs = nil
	}
}

func (c *clusterObjects) apply(e Event, name string, ch *Changes) {
	if name == "" {
		return
	}
	switch e.Kind {
	case KindKubeletConfig:
		applyNamed(c.kcs, name, e.KubeletConfig, e.Deleted)
		ch.Configs = true
	case KindContainerRuntimeConfig:
		applyNamed(c.crcs, name, e.ContainerRuntimeConfig, e.Deleted)
		ch.Configs = true
	case KindMachineConfig:
		if old := c.mcs[name]; !e.Deleted && old == e.MachineConfig {
			return
		}
		if e.Deleted {
			delete(c.mcs, name)
		} else {
			c.mcs[name] = e.MachineConfig
		}
		c.mcList = sortedValues(c.mcs, func(mc *mcfgv1.MachineConfig) string { return mc.Name })
		ch.Configs = true
	case KindMachineConfiguration:
		// Only "cluster" means anything to MCO; a source watching more would be wrong,
		// but the store need not trust it.
		if name != bootimage.MachineConfigurationName {
			return
		}
		if e.Deleted {
			c.mcfg = nil
		} else {
			c.mcfg = e.MachineConfiguration
		}
		ch.Configs, ch.BootImages = true, true
	case KindMachineSet:
		if e.Deleted {
			delete(c.sets, name)
		} else {
			c.sets[name] = e.MachineSet
		}
		c.setList = sortedValues(c.sets, func(ms *machinev1beta1.MachineSet) string { return ms.Name })
		ch.BootImages = true
	case KindCAPI:
		applyNamed(c.capi, name, e.CAPI, e.Deleted)
		if e.CAPI.GetKind() == "MachineDeployment" {
			c.mds = nil
			for _, u := range c.capi {
				if u.GetKind() == "MachineDeployment" {
					c.mds = append(c.mds, u)
				}
			}
			slices.SortFunc(c.mds, func(a, b *unstructured.Unstructured) int {
				return cmp.Compare(bootimage.MDName(a), bootimage.MDName(b))
			})
		}
		ch.BootImages = true
	case KindBootImages:
		if name != bootimage.ConfigMapName {
			return
		}
		c.bootImages, c.stream, c.streamErr = nil, nil, nil
		if !e.Deleted {
			c.bootImages = e.ConfigMap
			c.stream, c.streamErr = bootimage.StreamFromConfigMap(e.ConfigMap)
		}
		ch.BootImages = true
	}
}

func sortedValues[T any](m map[string]T, name func(T) string) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(name(a), name(b)) })
	return out
}

// MachineConfigs returns every MachineConfig, sorted by name. The slice is the store's
// own: read it, don't keep it across an Apply.
func (s *Store) MachineConfigs() []*mcfgv1.MachineConfig { return s.cluster.mcList }

// Feeds are the KubeletConfigs and ContainerRuntimeConfigs selecting pool, with their
// conditions (generated.Feeds).
func (s *Store) Feeds(pool string) []generated.Feed {
	if len(s.cluster.kcs) == 0 && len(s.cluster.crcs) == 0 {
		return nil
	}
	pools := make([]*mcfgv1.MachineConfigPool, 0, len(s.poolList))
	for _, p := range s.poolList {
		if p.Obj != nil {
			pools = append(pools, p.Obj)
		}
	}
	kcs := make([]*mcfgv1.KubeletConfig, 0, len(s.cluster.kcs))
	for _, kc := range s.cluster.kcs {
		kcs = append(kcs, kc)
	}
	crcs := make([]*mcfgv1.ContainerRuntimeConfig, 0, len(s.cluster.crcs))
	for _, c := range s.cluster.crcs {
		crcs = append(crcs, c)
	}
	return generated.Feeds(pools, kcs, crcs, pool)
}

// applyNamed puts obj under name in m, or removes it.
func applyNamed[T any](m map[string]*T, name string, obj *T, deleted bool) {
	if deleted || obj == nil {
		delete(m, name)
		return
	}
	m[name] = obj
}

// MachineConfig returns the MachineConfig named name, or nil.
func (s *Store) MachineConfig(name string) *mcfgv1.MachineConfig { return s.cluster.mcs[name] }

// RenderedConfigs returns the pool's rendered MachineConfigs (rendered-<pool>-<hash>),
// sorted by name.
func (s *Store) RenderedConfigs(pool string) []*mcfgv1.MachineConfig {
	prefix := render.PoolPrefix(pool)
	var out []*mcfgv1.MachineConfig
	for _, mc := range s.cluster.mcList {
		if strings.HasPrefix(mc.Name, prefix) {
			out = append(out, mc)
		}
	}
	return out
}

// MachineConfiguration returns MachineConfiguration/cluster, or nil when the cluster
// has none (or does not serve the API).
func (s *Store) MachineConfiguration() *operatorv1.MachineConfiguration { return s.cluster.mcfg }

// MachineSets returns the Machine API MachineSets, sorted by name. The slice is the
// store's own.
func (s *Store) MachineSets() []*machinev1beta1.MachineSet { return s.cluster.setList }

// MachineDeployments returns the Cluster API MachineDeployments, sorted by
// namespace/name; none where Cluster API is not installed. The slice is the store's own.
func (s *Store) MachineDeployments() []*unstructured.Unstructured { return s.cluster.mds }

// CAPIObject is a bootimage.CAPIGetter over the Cluster API objects the source feeds:
// a boot image decision reads a MachineDeployment's template, Cluster and AWSCluster
// through it, as the controller reads them from the API server.
func (s *Store) CAPIObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	kind, ok := capiKinds[gvr.Resource]
	if !ok {
		return nil, fmt.Errorf("%s are not read by the TUI", gvr.GroupResource())
	}
	if u := s.cluster.capi[capiKey(kind, namespace, name)]; u != nil {
		return u, nil
	}
	return nil, fmt.Errorf("%s %s/%s not found", kind, namespace, name)
}

// capiKinds are the kinds of the Cluster API resources the source watches.
var capiKinds = map[string]string{
	bootimage.MachineDeploymentsResource.Resource:  "MachineDeployment",
	bootimage.AWSMachineTemplatesResource.Resource: "AWSMachineTemplate",
	bootimage.GCPMachineTemplatesResource.Resource: "GCPMachineTemplate",
	bootimage.ClustersResource.Resource:            "Cluster",
	bootimage.AWSClustersResource.Resource:         "AWSCluster",
}

func capiKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// BootImageStream returns the target boot images from the coreos-bootimages ConfigMap:
// nil and nil when there is none, nil and the reason when it cannot be read.
func (s *Store) BootImageStream() (*bootimage.Stream, error) {
	return s.cluster.stream, s.cluster.streamErr
}

// DisruptionPolicy is the node disruption policy nodes act on: MCO's merged policy from
// MachineConfiguration/cluster's status when MCO has written one, else MCO's defaults
// with the administrator's spec laid over them, as MCO itself would merge them.
func (s *Store) DisruptionPolicy() disruption.Policy {
	m := s.cluster.mcfg
	if m == nil {
		return disruption.DefaultPolicy()
	}
	if st := m.Status.NodeDisruptionPolicyStatus.ClusterPolicies; len(st.Files) > 0 || len(st.Units) > 0 || len(st.SSHKey.Actions) > 0 {
		return st
	}
	return disruption.Merge(disruption.DefaultPolicy(), m.Spec.NodeDisruptionPolicy)
}
