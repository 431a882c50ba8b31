package generated

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Inputs are what generation for a pool reads, as the offline commands have them.
type Inputs struct {
	Pools                   []*mcfgv1.MachineConfigPool
	KubeletConfigs          []*mcfgv1.KubeletConfig
	ContainerRuntimeConfigs []*mcfgv1.ContainerRuntimeConfig
	// Nodes, when known, are checked for CRI-O (CheckCRIO).
	Nodes []*corev1.Node
	// KubeletBase is nil when no base is known: then a KubeletConfig that selects the
	// pool is an error, since what it generates cannot be predicted.
	KubeletBase *KubeletBase
}

// ForPool returns the MachineConfigs MCO's controllers (or mcotui's) generate for pool
// from in, in name order, and a warning for each object that selects the pool but is
// refused, as on a cluster, where it gets a failure condition and generates nothing.
// Names follow the objects' suffix annotations, then Suffixes.
func ForPool(pool *mcfgv1.MachineConfigPool, in Inputs) ([]*mcfgv1.MachineConfig, []string, error) {
	var out []*mcfgv1.MachineConfig
	var warnings []string
	var kcs []*mcfgv1.KubeletConfig
	var sources []Source
	for _, kc := range in.KubeletConfigs {
		ps, err := SelectPools(kc.Spec.MachineConfigPoolSelector, []*mcfgv1.MachineConfigPool{pool})
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("KubeletConfig %s: %v", kc.Name, err))
			continue
		}
		if len(ps) == 1 {
			kcs = append(kcs, kc)
			sources = append(sources, SourceOf(kc.ObjectMeta))
		}
	}
	if len(kcs) > 0 && in.KubeletBase == nil {
		return nil, nil, fmt.Errorf("KubeletConfig %s selects pool %s, but no base kubelet configuration is known to merge it onto", kcs[0].Name, pool.Name)
	}
	suffixes, errs := Suffixes(KindKubelet, sources)
	for _, kc := range kcs {
		if err := errs[kc.Name]; err != nil {
			warnings = append(warnings, fmt.Sprintf("KubeletConfig %s is not applied: %v", kc.Name, err))
			continue
		}
		mc, err := Kubelet(kc, pool, *in.KubeletBase, Name(pool.Name, KindKubelet, suffixes[kc.Name]))
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("KubeletConfig %s is not applied: %v", kc.Name, err))
			continue
		}
		out = append(out, mc)
	}

	var members []*corev1.Node
	if sel, err := poolNodeSelector(pool); err == nil {
		for _, n := range in.Nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				members = append(members, n)
			}
		}
	}
	var crcs []*mcfgv1.ContainerRuntimeConfig
	sources = nil
	for _, c := range in.ContainerRuntimeConfigs {
		ps, err := SelectPools(c.Spec.MachineConfigPoolSelector, []*mcfgv1.MachineConfigPool{pool})
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("ContainerRuntimeConfig %s: %v", c.Name, err))
			continue
		}
		if len(ps) == 1 {
			crcs = append(crcs, c)
			sources = append(sources, SourceOf(c.ObjectMeta))
		}
	}
	suffixes, errs = Suffixes(KindContainerRuntime, sources)
	for _, c := range crcs {
		if err := errs[c.Name]; err != nil {
			warnings = append(warnings, fmt.Sprintf("ContainerRuntimeConfig %s is not applied: %v", c.Name, err))
			continue
		}
		mc, err := ContainerRuntime(c, pool, members, Name(pool.Name, KindContainerRuntime, suffixes[c.Name]))
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("ContainerRuntimeConfig %s is not applied: %v", c.Name, err))
			continue
		}
		out = append(out, mc)
	}
	return out, warnings, nil
}

// poolNodeSelector is the pool's node selector; a pool without one selects no node.
func poolNodeSelector(pool *mcfgv1.MachineConfigPool) (labels.Selector, error) {
	if pool.Spec.NodeSelector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector)
}
