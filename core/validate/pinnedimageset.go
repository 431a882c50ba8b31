package validate

import (
	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/pinned"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"gopkg.in/yaml.v3"
)

// pinnedImageSet checks what the CRD checks of a PinnedImageSet, which a cluster would
// refuse: 1 to 500 images, each a pull spec by digest, no name twice.
func (c *checker) pinnedImageSet(doc manifest.Document) {
	set, ok := doc.Object.(*mcfgv1.PinnedImageSet)
	if !ok {
		return
	}
	at := path{"spec", "pinnedImages"}
	n := len(set.Spec.PinnedImages)
	switch {
	case n < pinned.MinImages:
		c.add(Error, lookupOr(doc, at), at, "PinnedImageSet %s lists no images: spec.pinnedImages needs at least %d", doc.Name, pinned.MinImages)
	case n > pinned.MaxImages:
		c.add(Error, lookupOr(doc, at), at, "PinnedImageSet %s lists %d images: at most %d are allowed; split it into several sets", doc.Name, n, pinned.MaxImages)
	}
	seen := map[string]bool{}
	for i, r := range set.Spec.PinnedImages {
		p := at.with(i, "name")
		name := string(r.Name)
		if err := pinned.CheckRef(name); err != nil {
			c.add(Error, lookupOr(doc, p), p, "%s", err)
		}
		if seen[name] && name != "" {
			c.add(Error, lookupOr(doc, p), p, "image %q is listed twice (spec.pinnedImages is keyed by name)", name)
		}
		seen[name] = true
	}
}

// lookupOr is the node at p, or the document's root when p is absent.
func lookupOr(doc manifest.Document, p path) *yaml.Node {
	if n := manifest.Lookup(doc.Root, p.keys()...); n != nil {
		return n
	}
	return doc.Root
}
