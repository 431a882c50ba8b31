package generated

import (
	"cmp"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Feed is one KubeletConfig or ContainerRuntimeConfig as `mcotui status` and the
// TUI's configs pane list it: the pools it selects and its current condition.
type Feed struct {
	Kind, Name string
	Pools      []string
	// Accepted is "True", "False" or "" (no condition yet: not synced, or nothing
	// generates it here).
	Accepted string
	Message  string
}

// Feeds lists kcs and crcs with the pools among pools each selects, by kind then
// name. With only set, the objects that do not select that pool are left out.
func Feeds(pools []*mcfgv1.MachineConfigPool, kcs []*mcfgv1.KubeletConfig, crcs []*mcfgv1.ContainerRuntimeConfig, only string) []Feed {
	selected := func(s []*mcfgv1.MachineConfigPool) []string {
		out := make([]string, len(s))
		for i, p := range s {
			out[i] = p.Name
		}
		return out
	}
	var out []Feed
	for _, kc := range kcs {
		ps, _ := SelectPools(kc.Spec.MachineConfigPoolSelector, pools)
		f := Feed{Kind: "KubeletConfig", Name: kc.Name, Pools: selected(ps)}
		if c, ok, has := LastKubelet(kc.Status.Conditions); has {
			f.Accepted, f.Message = boolWord(ok), c.Message
		}
		out = append(out, f)
	}
	for _, crc := range crcs {
		ps, _ := SelectPools(crc.Spec.MachineConfigPoolSelector, pools)
		f := Feed{Kind: "ContainerRuntimeConfig", Name: crc.Name, Pools: selected(ps)}
		if c, ok, has := LastContainerRuntime(crc.Status.Conditions); has {
			f.Accepted, f.Message = boolWord(ok), c.Message
		}
		out = append(out, f)
	}
	if only != "" {
		out = slices.DeleteFunc(out, func(f Feed) bool { return !slices.Contains(f.Pools, only) })
	}
	slices.SortStableFunc(out, func(a, b Feed) int {
		return cmp.Or(strings.Compare(b.Kind, a.Kind), strings.Compare(a.Name, b.Name)) // KubeletConfig first
	})
	return out
}

func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
