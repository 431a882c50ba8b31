package validate

import (
	"reflect"
	"slices"
	"strings"

	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/ospkg"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"gopkg.in/yaml.v3"
)

// apiVersions are the apiVersions of the kinds validate checks.
var apiVersions = map[string]string{
	manifest.KindMachineConfig:          mcfgv1.GroupVersion.String(),
	manifest.KindMachineConfigPool:      mcfgv1.GroupVersion.String(),
	manifest.KindMachineConfiguration:   operatorv1.GroupVersion.String(),
	manifest.KindPinnedImageSet:         mcfgv1.GroupVersion.String(),
	manifest.KindKubeletConfig:          mcfgv1.GroupVersion.String(),
	manifest.KindContainerRuntimeConfig: mcfgv1.GroupVersion.String(),
}

// kernelTypes are the values MCO accepts for spec.kernelType; empty means default.
var kernelTypes = []string{"", "default", "realtime", "64k-pages"}

// specFields are the fields of a MachineConfig's spec, from the API types.
var specFields = jsonFields(reflect.TypeFor[mcfgv1.MachineConfigSpec]())

// object checks a manifest object. index is its position among its file's objects.
func (c *checker) object(index int, root *yaml.Node) {
	doc, err := manifest.DecodeObject(c.file, index, root)
	if err != nil {
		c.manifestError(root, err)
		if _, convErr := manifest.ToJSON(root); convErr != nil {
			return // checking on would report the same again, elsewhere
		}
	}
	want, known := apiVersions[doc.Kind]
	switch {
	case doc.Kind == "":
		return // DecodeObject said so
	case !known:
		c.add(Warning, manifest.Lookup(root, "kind"), path{"kind"}, "%s is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig", doc.Kind)
		return
	case doc.APIVersion != want:
		c.apiVersion(doc, want)
	}
	switch doc.Kind {
	case manifest.KindMachineConfig:
		c.machineConfig(doc)
	case manifest.KindPinnedImageSet:
		c.pinnedImageSet(doc)
	case manifest.KindMachineConfigPool:
		c.poolPolicy(doc) // poolpolicy.go
	case manifest.KindKubeletConfig:
		c.kubeletConfig(doc)
	case manifest.KindContainerRuntimeConfig:
		c.containerRuntimeConfig(doc)
	}
}

func (c *checker) apiVersion(doc manifest.Document, want string) {
	if n := manifest.Lookup(doc.Root, "apiVersion"); n != nil {
		c.add(Error, n, path{"apiVersion"}, "%s has apiVersion %s; set it to %s", doc.Kind, doc.APIVersion, want)
		return
	}
	c.add(Error, doc.Root, path{"apiVersion"}, "%s has no apiVersion; set it to %s", doc.Kind, want)
}

// machineConfig checks what MCO checks of a MachineConfig beyond its types, and its
// Ignition config.
func (c *checker) machineConfig(doc manifest.Document) {
	c.roleLabel(doc)
	c.objectSize(doc)
	spec := resolve(manifest.Lookup(doc.Root, "spec"))
	if spec == nil || spec.Kind != yaml.MappingNode {
		return // no spec, or one DecodeObject refused
	}
	for _, key := range mappingKeys(spec) {
		if !slices.Contains(specFields, key.Value) {
			c.add(Warning, key, path{"spec", key.Value}, "unknown field %q: a MachineConfig's spec has %s; the API server drops or refuses it", key.Value, strings.Join(specFields, ", "))
		}
	}
	c.kernelType(spec)
	c.extensions(spec)
	c.osImageURL(spec)
	c.pool = ""
	if n := resolve(manifest.Lookup(doc.Root, "metadata", "labels", mcfgv1.MachineConfigRoleLabelKey)); n != nil && n.Kind == yaml.ScalarNode {
		c.pool = n.Value
	}
	defer func() { c.pool = "" }()
	if fips := resolve(manifest.Lookup(spec, "fips")); fips != nil && fips.Kind == yaml.ScalarNode && fips.Value == "true" {
		c.add(Warning, fips, path{"spec", "fips"}, "fips %s", firstBootOnly)
	}
	c.config(spec)
}

// objectSize refuses a MachineConfig larger than the API server stores in one object,
// and warns about one near it: as JSON, as the API server would hold it.
func (c *checker) objectSize(doc manifest.Document) {
	js, err := manifest.ToJSON(doc.Root)
	if err != nil {
		return // reported where it is found
	}
	switch n := len(js); {
	case n > manifest.MaxObjectSize:
		c.add(Error, doc.Root, path{}, "the MachineConfig is %d bytes as JSON, more than the %d the API server stores in one object (etcd's default request limit): "+
			"split it, move large files out, or compress their contents (gzip)", n, manifest.MaxObjectSize)
	case n > manifest.WarnObjectSize:
		c.add(Warning, doc.Root, path{}, "the MachineConfig is %d bytes as JSON, near the %d the API server stores in one object; "+
			"its pool's rendered config, which holds it and every other of the pool's, must fit there too", n, manifest.MaxObjectSize)
	}
}

// roleLabel warns when no standard pool selects the MachineConfig: the master and worker
// pools select by the role label.
func (c *checker) roleLabel(doc manifest.Document) {
	if n := manifest.Lookup(doc.Root, "metadata", "labels", mcfgv1.MachineConfigRoleLabelKey); n != nil {
		return
	}
	at := locate(doc.Root, path{"metadata", "labels"}, false)
	c.add(Warning, at, path{"metadata", "labels", mcfgv1.MachineConfigRoleLabelKey},
		"no %s label: the master and worker pools will not select this MachineConfig; label it with the role of the pool it is for", mcfgv1.MachineConfigRoleLabelKey)
}

func (c *checker) kernelType(spec *yaml.Node) {
	kt := resolve(manifest.Lookup(spec, "kernelType"))
	if kt == nil || kt.Kind != yaml.ScalarNode || kt.Tag == "!!null" || slices.Contains(kernelTypes, kt.Value) {
		return
	}
	c.add(Error, kt, path{"spec", "kernelType"}, "kernelType %q is not valid: use default, realtime or 64k-pages, or leave it empty", kt.Value)
}

// extensions checks each of spec.extensions against the extensions MCO supports: the
// agent refuses a config with any other (it has no packages for it), as MCO's
// ValidateMachineConfigExtensions does.
func (c *checker) extensions(spec *yaml.Node) {
	list := resolve(manifest.Lookup(spec, "extensions"))
	if list == nil || list.Kind != yaml.SequenceNode {
		return
	}
	for i, e := range list.Content {
		e = resolve(e)
		if e == nil || e.Kind != yaml.ScalarNode {
			continue
		}
		if _, err := ospkg.Packages([]string{e.Value}); err != nil {
			c.add(Error, e, path{"spec", "extensions", i}, "extension %q is not supported: use one of %s", e.Value, strings.Join(ospkg.Extensions(), ", "))
		}
	}
}

// osImageURL checks that the OS image is a container image pull spec, pinned by digest
// so that every node boots the same image.
func (c *checker) osImageURL(spec *yaml.Node) {
	u := resolve(manifest.Lookup(spec, "osImageURL"))
	if u == nil || u.Kind != yaml.ScalarNode || u.Value == "" || u.Tag == "!!null" {
		return
	}
	at := path{"spec", "osImageURL"}
	switch {
	case strings.Contains(u.Value, "://") || strings.ContainsAny(u.Value, " \t\n"):
		c.add(Error, u, at, "osImageURL %q is not a container image pull spec: write it as registry/repository@sha256:<digest>", u.Value)
	case !strings.Contains(u.Value, "@sha256:"):
		c.add(Warning, u, at, "osImageURL %q is not pinned by digest: a tag can move, and nodes would boot different images; write it as registry/repository@sha256:<digest>", u.Value)
	}
}

// config checks spec.config. A MachineConfig without one carries no Ignition config,
// which is fine; one with a config must carry a whole one, ignition.version included.
func (c *checker) config(spec *yaml.Node) {
	cfg := manifest.Lookup(spec, "config")
	r := resolve(cfg)
	if r == nil || r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		return
	}
	at := path{"spec", "config"}
	if r.Kind != yaml.MappingNode {
		c.add(Error, cfg, at, "must be an Ignition config: an object with ignition.version and the sections to apply")
		return
	}
	c.ignition(cfg, at, nil)
}

// jsonFields returns the JSON names of a struct type's fields, in declaration order.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
