package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/google/go-containerregistry/pkg/name"
)

// The node's registries configuration as CRI-O (through containers/image) reads it:
// containers-registries.conf(5), version 2. It is what an ImageDigestMirrorSet or
// ImageTagMirrorSet becomes on an OpenShift node (MCO writes registries.conf), so an
// image the node pulls through a mirror is sized through the same mirror: the source
// may be unreachable from the node, or blocked outright.

// Paths of the configuration on the host.
const (
	RegistriesConf    = "/etc/containers/registries.conf"
	RegistriesConfDir = "/etc/containers/registries.conf.d"
)

// Mirror restrictions (pull-from-mirror).
const (
	pullFromAll        = "all"
	pullFromDigestOnly = "digest-only"
	pullFromTagOnly    = "tag-only"
)

// RegistryEndpoint is a place images are pulled from: a registry's own location or
// one of its mirrors.
type RegistryEndpoint struct {
	// Location is host[:port][/path]; a mirror's replaces the registry's prefix.
	Location string `toml:"location"`
	// Insecure allows plain HTTP and unverified TLS.
	Insecure bool `toml:"insecure"`
	// PullFromMirror ("all", "digest-only", "tag-only") restricts which references a
	// mirror serves; "" is "all".
	PullFromMirror string `toml:"pull-from-mirror"`
}

// Registry is one [[registry]] table.
type Registry struct {
	// Prefix selects the images this entry is for (default: Location); "*.example.com"
	// matches every subdomain of example.com.
	Prefix string `toml:"prefix"`
	RegistryEndpoint
	Mirrors []RegistryEndpoint `toml:"mirror"`
	// Blocked: the source itself is never contacted (its mirrors still are, which is
	// what an ImageDigestMirrorSet's NeverContactSource policy is written as).
	Blocked bool `toml:"blocked"`
	// MirrorByDigestOnly: mirrors serve references by digest only.
	MirrorByDigestOnly bool `toml:"mirror-by-digest-only"`
}

// Registries is a node's registries configuration, merged from the main file and its
// drop-ins.
type Registries struct {
	// Entries in the order the files define them; a drop-in's entry replaces an
	// earlier one of the same prefix.
	Entries []Registry
}

type registriesFile struct {
	Registries []Registry `toml:"registry"`
}

// LoadRegistries reads conf and then every *.conf in dir in lexical order, as
// containers/image does: an entry of a later file replaces an earlier entry of the same
// prefix, new prefixes are added. Missing files are no configuration; a file that
// cannot be parsed is an error naming it (the runtime would refuse it too).
func LoadRegistries(conf, dir string) (*Registries, error) {
	files := []string{conf}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("registries configuration: read %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	r := &Registries{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("registries configuration: %w", err)
		}
		var parsed registriesFile
		if _, err := toml.Decode(string(data), &parsed); err != nil {
			return nil, fmt.Errorf("registries configuration %s: %w", f, err)
		}
		for _, reg := range parsed.Registries {
			if err := reg.normalize(); err != nil {
				return nil, fmt.Errorf("registries configuration %s: %w", f, err)
			}
			if i := slices.IndexFunc(r.Entries, func(e Registry) bool { return e.Prefix == reg.Prefix }); i >= 0 {
				r.Entries[i] = reg
			} else {
				r.Entries = append(r.Entries, reg)
			}
		}
	}
	return r, nil
}

func (reg *Registry) normalize() error {
	reg.Location = strings.TrimSuffix(reg.Location, "/")
	if reg.Prefix == "" {
		reg.Prefix = reg.Location
	}
	reg.Prefix = strings.TrimSuffix(reg.Prefix, "/")
	if reg.Prefix == "" {
		return errors.New("a [[registry]] has neither prefix nor location")
	}
	if strings.HasPrefix(reg.Prefix, "*.") && reg.Location != "" {
		return fmt.Errorf("registry %s: a wildcard prefix takes no location", reg.Prefix)
	}
	for i, m := range reg.Mirrors {
		m.Location = strings.TrimSuffix(m.Location, "/")
		if m.Location == "" {
			return fmt.Errorf("registry %s: a mirror without a location", reg.Prefix)
		}
		switch m.PullFromMirror {
		case "", pullFromAll, pullFromDigestOnly, pullFromTagOnly:
		default:
			return fmt.Errorf("registry %s: mirror %s: pull-from-mirror %q is none of all, digest-only, tag-only", reg.Prefix, m.Location, m.PullFromMirror)
		}
		if reg.MirrorByDigestOnly && m.PullFromMirror != "" && m.PullFromMirror != pullFromDigestOnly {
			return fmt.Errorf("registry %s: mirror %s: pull-from-mirror %s contradicts mirror-by-digest-only", reg.Prefix, m.Location, m.PullFromMirror)
		}
		reg.Mirrors[i] = m
	}
	return nil
}

// PullSource is one place an image is asked for, in the runtime's order.
type PullSource struct {
	// Image is the pull spec at that place.
	Image    string
	Insecure bool
	Mirror   bool
}

// Sources returns where the runtime looks for image, in its order: the usable mirrors
// of the entry with the longest matching prefix, then the source itself unless it is
// blocked. An image no entry matches comes from its own registry. A blocked source with
// no usable mirror is an error: the runtime would refuse the pull.
func (r *Registries) Sources(image string) ([]PullSource, error) {
	ref, err := name.ParseReference(image, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	_, digested := ref.(name.Digest)
	// The repository as written (the library's Name() would turn docker.io into
	// index.docker.io, which no configuration names).
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	var reg *Registry
	matched := -1
	for i := range r.Entries {
		if n := r.Entries[i].match(repo); n > matched {
			reg, matched = &r.Entries[i], n
		}
	}
	if reg == nil {
		return []PullSource{{Image: image}}, nil
	}
	rest := image[matched:]
	var out []PullSource
	for _, m := range reg.Mirrors {
		restriction := m.PullFromMirror
		if reg.MirrorByDigestOnly {
			restriction = pullFromDigestOnly
		}
		if restriction == pullFromDigestOnly && !digested || restriction == pullFromTagOnly && digested {
			continue
		}
		out = append(out, PullSource{Image: m.Location + rest, Insecure: m.Insecure, Mirror: true})
	}
	if !reg.Blocked {
		loc := reg.Location
		if loc == "" { // a wildcard entry: the source is the image's own registry
			loc = image[:matched]
		}
		out = append(out, PullSource{Image: loc + rest, Insecure: reg.Insecure})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("registry %s is blocked in the registries configuration and has no mirror for %s", reg.Prefix, image)
	}
	return out, nil
}

// match returns how much of repo (host/path, no tag or digest) the entry's prefix
// covers, or -1: the prefix must end at a path boundary (containers/image's rule), a
// wildcard covers the host.
func (reg *Registry) match(repo string) int {
	if suffix, ok := strings.CutPrefix(reg.Prefix, "*"); ok {
		host, _, _ := strings.Cut(repo, "/")
		hostname := host
		if h, _, ok := strings.Cut(host, ":"); ok {
			hostname = h
		}
		if strings.HasSuffix(hostname, suffix) {
			return len(host)
		}
		return -1
	}
	switch {
	case repo == reg.Prefix:
		return len(reg.Prefix)
	case strings.HasPrefix(repo, reg.Prefix+"/"):
		return len(reg.Prefix)
	}
	return -1
}
