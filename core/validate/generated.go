package validate

import (
	"errors"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/osstream"
)

// kubeletConfig checks a KubeletConfig with the rules the controller applies before it
// generates the pool's kubelet MachineConfig (generated.ValidateKubelet): what would
// otherwise surface only after apply, as the object's Failure condition and no change
// on any node. The pool-dependent rule (staticPodPath) needs the pool and is left to
// render and the controller.
func (c *checker) kubeletConfig(doc manifest.Document) {
	kc, ok := doc.Object.(*mcfgv1.KubeletConfig)
	if !ok {
		return
	}
	c.generatedRefusal(doc, generated.ValidateKubelet(kc))
}

// containerRuntimeConfig checks a ContainerRuntimeConfig as the controller does
// (generated.ValidateContainerRuntime).
func (c *checker) containerRuntimeConfig(doc manifest.Document) {
	crc, ok := doc.Object.(*mcfgv1.ContainerRuntimeConfig)
	if !ok {
		return
	}
	c.generatedRefusal(doc, generated.ValidateContainerRuntime(crc))
	if osstream.IsRHEL10(c.opts.OSImageStream) && crc.Spec.ContainerRuntimeConfig != nil &&
		crc.Spec.ContainerRuntimeConfig.DefaultRuntime == mcfgv1.ContainerRuntimeDefaultRuntimeRunc {
		p := path{"spec", "containerRuntimeConfig", "defaultRuntime"}
		c.add(Error, lookupOr(doc, p), p, "on OS image stream %s: %s", c.opts.OSImageStream, osstream.RuncRefusal("selected by ContainerRuntimeConfig "+doc.Name))
	}
}

// generatedRefusal reports err, the controller's refusal of doc, at the field it names.
func (c *checker) generatedRefusal(doc manifest.Document, err error) {
	if err == nil {
		return
	}
	var p path
	if fe := (*generated.FieldError)(nil); errors.As(err, &fe) {
		for _, k := range fe.Path {
			p = append(p, k)
		}
	}
	c.add(Error, lookupOr(doc, p), p, "%s %s: %s (the controller refuses it and generates no MachineConfig for it)", doc.Kind, doc.Name, err)
}
