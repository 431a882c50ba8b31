package generated

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SuffixAnnotation on a KubeletConfig or ContainerRuntimeConfig records the suffix of
// the MachineConfigs made from it ("" for none), so that its MachineConfigs keep their
// names when others come and go (MCO's MCNameSuffixAnnotationKey).
const SuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"

// MaxSuffix is the highest suffix MCO gives: ten objects per pool ("" and 1 to 9).
const MaxSuffix = 9

// Kinds of generated MachineConfig, the last word of their names.
const (
	KindKubelet          = "kubelet"
	KindContainerRuntime = "containerruntime"
)

// Name is the MachineConfig MCO generates for kind on pool: 99-<pool>-generated-<kind>,
// then -<suffix> when suffix is not empty.
func Name(pool, kind, suffix string) string {
	n := fmt.Sprintf("99-%s-generated-%s", pool, kind)
	if suffix != "" {
		n += "-" + suffix
	}
	return n
}

// Source is what suffix assignment reads of a KubeletConfig or ContainerRuntimeConfig.
type Source struct {
	Name    string
	Created metav1.Time
	// Suffix is the SuffixAnnotation's value; HasSuffix says whether it is set.
	Suffix    string
	HasSuffix bool
}

// tooMany is MCO's message when a pool has no suffix left, with kind's plural as MCO
// words it.
func tooMany(kind string) error {
	if kind == KindKubelet {
		return fmt.Errorf("max number of supported kubelet config (10) has been reached. Please delete old kubelet configs before retrying")
	}
	return fmt.Errorf("max number of supported ctrcfgs (10) has been reached. Please delete old ctrcfgs before retrying")
}

// Suffixes gives every source on one pool its suffix, as MCO's getManagedKubeletConfigKey
// does one at a time: a source keeps the suffix it is annotated with; the others, oldest
// first (then by name), get "" when they are the pool's only source, else one more than
// the highest suffix given so far. A source past MaxSuffix gets an error: MCO's "max
// number ... has been reached", and nothing is generated from it.
func Suffixes(kind string, sources []Source) (map[string]string, map[string]error) {
	out := map[string]string{}
	errs := map[string]error{}
	highest := 0
	for _, s := range sources {
		if !s.HasSuffix {
			continue
		}
		out[s.Name] = s.Suffix
		if n, err := strconv.Atoi(s.Suffix); err == nil && n > highest {
			highest = n
		} else if err != nil && s.Suffix != "" {
			errs[s.Name] = fmt.Errorf("annotation %s=%q is not a number", SuffixAnnotation, s.Suffix)
		}
	}
	rest := slices.Clone(sources)
	slices.SortFunc(rest, func(a, b Source) int {
		if c := a.Created.Compare(b.Created.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, s := range rest {
		if s.HasSuffix {
			continue
		}
		if len(sources) == 1 {
			out[s.Name] = ""
			continue
		}
		if highest+1 > MaxSuffix {
			errs[s.Name] = tooMany(kind)
			continue
		}
		highest++
		out[s.Name] = strconv.Itoa(highest)
	}
	return out, errs
}

// SourceOf reads what Suffixes needs from an object's metadata.
func SourceOf(m metav1.ObjectMeta) Source {
	v, ok := m.Annotations[SuffixAnnotation]
	return Source{Name: m.Name, Created: m.CreationTimestamp, Suffix: v, HasSuffix: ok}
}

// SelectPools returns the pools sel selects, by their labels. As in MCO, a nil or empty
// selector selects no pool, not every pool.
func SelectPools(sel *metav1.LabelSelector, pools []*mcfgv1.MachineConfigPool) ([]*mcfgv1.MachineConfigPool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid label selector: %w", err)
	}
	var out []*mcfgv1.MachineConfigPool
	if s.Empty() {
		return nil, nil
	}
	for _, p := range pools {
		if s.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *mcfgv1.MachineConfigPool) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// SuffixFor is the suffix of self's MachineConfigs on a pool that others (self
// included or not) also select, as MCO's controller chooses it when it syncs self:
// self's annotation when set; "" when self is the pool's only source; else one more
// than the highest suffix any other source is annotated with. Sources not annotated
// yet do not hold a suffix, so which of two new sources gets which suffix depends on
// the order they are synced in, as in MCO.
func SuffixFor(kind string, self Source, others []Source) (string, error) {
	if self.HasSuffix {
		return self.Suffix, nil
	}
	highest, n := 0, 1
	for _, o := range others {
		if o.Name == self.Name {
			continue
		}
		n++
		if o.HasSuffix && o.Suffix != "" {
			v, err := strconv.Atoi(o.Suffix)
			if err != nil {
				return "", fmt.Errorf("%s: annotation %s=%q is not a number", o.Name, SuffixAnnotation, o.Suffix)
			}
			highest = max(highest, v)
		}
	}
	if n == 1 {
		return "", nil
	}
	if highest+1 > MaxSuffix {
		return "", tooMany(kind)
	}
	return strconv.Itoa(highest + 1), nil
}
