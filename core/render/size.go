package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/manifest"
)

// Sizes that bound a rendered MachineConfig (manifest.MaxObjectSize): a larger one is
// never created, and the pool would wait for it with no word of why.
const (
	MaxSize  = manifest.MaxObjectSize
	WarnSize = manifest.WarnObjectSize
)

// TooLargeError says a pool's rendered config is larger than the API server stores.
type TooLargeError struct {
	Pool, Config string
	Size         int
	// Largest are the sources contributing the most, largest first, with their sizes.
	Largest []string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("pool %q: the rendered MachineConfig %s would be %s, more than the %s the API server stores in one object (etcd's default request limit); "+
		"the largest contributors are %s: move large files out of the MachineConfigs, or compress their contents (gzip)",
		e.Pool, e.Config, bytesText(e.Size), bytesText(MaxSize), strings.Join(e.Largest, ", "))
}

// checkSize refuses a rendered config over MaxSize, naming its largest sources, and
// warns about one over WarnSize.
func checkSize(pool string, rendered *mcfgv1.MachineConfig, sources []*mcfgv1.MachineConfig) (warning string, err error) {
	size := len(rendered.Spec.Config.Raw)
	if size <= WarnSize {
		// The rest of the object (metadata, kernel arguments, extensions) is small
		// beside a config that matters here; it is measured only near the limits.
		return "", nil
	}
	js, err := json.Marshal(rendered)
	if err != nil {
		return "", fmt.Errorf("pool %q: measure the rendered MachineConfig: %w", pool, err)
	}
	size = len(js)
	switch {
	case size > MaxSize:
		return "", &TooLargeError{Pool: pool, Config: rendered.Name, Size: size, Largest: largest(sources, 3)}
	case size > WarnSize:
		return fmt.Sprintf("the rendered MachineConfig %s is %s, near the %s the API server stores in one object; the largest contributors are %s",
			rendered.Name, bytesText(size), bytesText(MaxSize), strings.Join(largest(sources, 3), ", ")), nil
	}
	return "", nil
}

// largest names the n sources with the largest Ignition configs, with their sizes.
func largest(sources []*mcfgv1.MachineConfig, n int) []string {
	s := slices.Clone(sources)
	slices.SortStableFunc(s, func(a, b *mcfgv1.MachineConfig) int {
		return cmp.Compare(len(b.Spec.Config.Raw), len(a.Spec.Config.Raw))
	})
	var out []string
	for _, mc := range s[:min(n, len(s))] {
		out = append(out, fmt.Sprintf("%s (%s)", mc.Name, bytesText(len(mc.Spec.Config.Raw))))
	}
	return out
}

// bytesText is n in the unit people read it in.
func bytesText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
