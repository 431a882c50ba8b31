package configdiff

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/BurntSushi/toml"
	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// RegistriesConfPath is the container registries configuration, the one file whose
// node disruption action (Special) depends on what changed inside it.
const RegistriesConfPath = "/etc/containers/registries.conf"

// RegistriesConfChange says whether a change of RegistriesConfPath can be applied with
// a crio reload alone, without draining the node, as MCO's daemon decides it
// (pkg/daemon/drain.go isSafeContainerRegistryConfChanges).
type RegistriesConfChange struct {
	// Safe says the node need not drain: the change only adds registries whose
	// mirrors pull by digest only, adds digest-only mirrors to a registry, or appends
	// unqualified-search-registries.
	Safe bool `json:"safe"`
	// Reason names the first change that needs the drain; empty when Safe.
	Reason string `json:"reason,omitempty"`
}

// The parts of registries.conf (containers-registries.conf(5), version 2) that MCO
// compares, with the field names and types of containers/image's sysregistriesv2, so
// that MCO's comparison of whole registries (reflect.DeepEqual) sees the same fields.
type registriesConf struct {
	Registries                  []registry `toml:"registry"`
	UnqualifiedSearchRegistries []string   `toml:"unqualified-search-registries"`
}

type endpoint struct {
	Location       string `toml:"location"`
	Insecure       bool   `toml:"insecure"`
	PullFromMirror string `toml:"pull-from-mirror"`
}

type registry struct {
	Prefix string `toml:"prefix"`
	endpoint
	Mirrors            []endpoint `toml:"mirror"`
	Blocked            bool       `toml:"blocked"`
	MirrorByDigestOnly bool       `toml:"mirror-by-digest-only"`
}

// digestOnly is pull-from-mirror's value for a mirror used only for pulls by digest.
const digestOnly = "digest-only"

// registriesConfChange compares RegistriesConfPath in old and new (either may lack it,
// which reads as an empty file).
func registriesConfChange(old, new []types.File) *RegistriesConfChange {
	oldConf, err := readRegistriesConf(old)
	if err != nil {
		return &RegistriesConfChange{Reason: err.Error()}
	}
	newConf, err := readRegistriesConf(new)
	if err != nil {
		return &RegistriesConfChange{Reason: err.Error()}
	}
	if reason := registriesConfUnsafe(oldConf, newConf); reason != "" {
		return &RegistriesConfChange{Reason: reason}
	}
	return &RegistriesConfChange{Safe: true}
}

func readRegistriesConf(files []types.File) (registriesConf, error) {
	var conf registriesConf
	i := slices.IndexFunc(files, func(f types.File) bool { return f.Path == RegistriesConfPath })
	if i < 0 {
		return conf, nil
	}
	data, err := ignconfig.Contents(files[i])
	if err != nil {
		return conf, fmt.Errorf("%s cannot be read: %v", RegistriesConfPath, err)
	}
	if _, err := toml.Decode(string(data), &conf); err != nil {
		return conf, fmt.Errorf("%s is not valid TOML: %v", RegistriesConfPath, err)
	}
	return conf, nil
}

// registriesConfUnsafe is MCO's isSafeContainerRegistryConfChanges, rule for rule: it
// returns why the change needs a drain, or "" when it is safe. The search list may only
// grow at its end; no registry may go; a registry's prefix, location, blocked and
// insecure may not change, nor any of its mirrors go or lose digest-only; an added
// mirror must be digest-only (or its registry mirror-by-digest-only); an added registry
// must have only digest-only mirrors (or, without mirrors, mirror-by-digest-only).
// Anything else in the file (short names, credential helpers) does not need a drain.
func registriesConfUnsafe(old, new registriesConf) string {
	if len(old.UnqualifiedSearchRegistries) > len(new.UnqualifiedSearchRegistries) ||
		!slices.Equal(old.UnqualifiedSearchRegistries, new.UnqualifiedSearchRegistries[:len(old.UnqualifiedSearchRegistries)]) {
		return "unqualified-search-registries lost an entry or changed order"
	}
	byScope := func(c registriesConf) map[string]registry {
		m := map[string]registry{}
		for _, r := range c.Registries {
			scope := r.Location
			if r.Prefix != "" {
				scope = r.Prefix
			}
			m[scope] = r
		}
		return m
	}
	oldRegs, newRegs := byScope(old), byScope(new)
	for _, scope := range sortedKeys(oldRegs) {
		if _, ok := newRegs[scope]; !ok {
			return fmt.Sprintf("registry %s was removed", scope)
		}
	}
	for _, scope := range sortedKeys(newRegs) {
		nr := newRegs[scope]
		or, ok := oldRegs[scope]
		if !ok {
			if !allDigestOnly(nr) {
				return fmt.Sprintf("registry %s was added with a mirror that does not set pull-from-mirror = %q", scope, digestOnly)
			}
			continue
		}
		if reflect.DeepEqual(or, nr) {
			continue
		}
		switch {
		case or.Prefix != nr.Prefix:
			return fmt.Sprintf("registry %s: prefix changed from %q to %q", scope, or.Prefix, nr.Prefix)
		case or.Location != nr.Location:
			return fmt.Sprintf("registry %s: location changed from %q to %q", scope, or.Location, nr.Location)
		case or.Blocked != nr.Blocked:
			return fmt.Sprintf("registry %s: blocked changed from %t to %t", scope, or.Blocked, nr.Blocked)
		case or.Insecure != nr.Insecure:
			return fmt.Sprintf("registry %s: insecure changed from %t to %t", scope, or.Insecure, nr.Insecure)
		}
		for _, m := range or.Mirrors {
			if _, ok := findMirror(m.Location, nr.Mirrors); !ok {
				return fmt.Sprintf("registry %s: mirror %s was removed", scope, m.Location)
			}
		}
		for _, m := range nr.Mirrors {
			om, ok := findMirror(m.Location, or.Mirrors)
			switch {
			case ok && m.PullFromMirror != om.PullFromMirror && m.PullFromMirror != digestOnly:
				return fmt.Sprintf("registry %s: mirror %s: pull-from-mirror changed from %q to %q", scope, m.Location, om.PullFromMirror, m.PullFromMirror)
			case !ok && m.PullFromMirror != digestOnly && !nr.MirrorByDigestOnly:
				return fmt.Sprintf("registry %s: mirror %s was added without pull-from-mirror = %q", scope, m.Location, digestOnly)
			}
		}
	}
	return ""
}

func findMirror(loc string, mirrors []endpoint) (endpoint, bool) {
	i := slices.IndexFunc(mirrors, func(m endpoint) bool { return m.Location == loc })
	if i < 0 {
		return endpoint{}, false
	}
	return mirrors[i], true
}

func allDigestOnly(r registry) bool {
	if len(r.Mirrors) == 0 {
		return r.MirrorByDigestOnly
	}
	return !slices.ContainsFunc(r.Mirrors, func(m endpoint) bool { return m.PullFromMirror != digestOnly })
}

func sortedKeys(m map[string]registry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
