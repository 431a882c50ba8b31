package bootimage

import (
	"fmt"
	"maps"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// VSphereTemplates looks up VM templates in vCenter. MCO makes a vSphere boot image by
// uploading the stream's OVA to vCenter as a template; mcotui does not reach vCenter,
// so the template must be made there by other means, and only a VSphereTemplates that
// can see vCenter lets a MachineSet be pointed at it.
type VSphereTemplates interface {
	// TemplateFor returns the name, as providerSpec.value.template gives it, of a
	// template in ws's vCenter and datacenter made from RHCOS release (its product
	// version, as MCO reads it); "" when there is none.
	TemplateFor(ws machinev1beta1.Workspace, release string) (string, error)
}

// reconcileVSphere follows MCO's reconcileVSphereProviderSpec as far as mcotui can
// reach: the target is a template of the release of the stream's vmware OVA in the
// MachineSet's workspace. Making it (downloading and uploading the OVA, as MCO does) is
// out of reach, so:
//   - without Options.VSphereTemplates, the MachineSet is skipped, saying what to upload;
//   - when vCenter has no template of that release, it is skipped, likewise;
//   - when it has one and providerSpec.value.template names another, template becomes
//     its name, and nothing else changes.
func (r *Result) reconcileVSphere(ms *machinev1beta1.MachineSet, value map[string]any, stream *Stream, opts Options) error {
	var spec machinev1beta1.VSphereMachineProviderSpec
	if err := decodeProviderSpec(ms, "VSphereMachineProviderSpec", &spec); err != nil {
		return err
	}
	r.UserDataSecret = secretName(spec.UserDataSecret)
	r.Current = spec.Template
	if spec.Workspace == nil || spec.Workspace.Server == "" {
		return fmt.Errorf("spec.template.spec.providerSpec.value.workspace.server is empty: the vCenter of the template is unknown")
	}
	ws := *spec.Workspace
	release, ova, err := stream.VMwareOVA(r.Arch)
	if err != nil {
		return err
	}
	upload := fmt.Sprintf("import the OVA %s (RHCOS %s) into vCenter %s, datacenter %s, as a template (for example with govc import.ova)", ova, release, ws.Server, ws.Datacenter)
	if opts.VSphereTemplates == nil {
		r.skip(SkipNoVCenter, fmt.Sprintf("a vSphere boot image is a template made in vCenter from the stream's OVA, and mcotui does not reach vCenter: it can neither upload the OVA nor see the templates. To update it, %s and set providerSpec.value.template to its name (now %q)", upload, spec.Template))
		return nil
	}
	name, err := opts.VSphereTemplates.TemplateFor(ws, release)
	if err != nil {
		return fmt.Errorf("looking up a template of RHCOS %s in vCenter %s: %w", release, ws.Server, err)
	}
	if name == "" {
		r.skip(SkipNoTemplate, fmt.Sprintf("vCenter %s has no template of RHCOS %s, and uploading the OVA is out of reach of mcotui: %s; the next sync points the MachineSet at it", ws.Server, release, upload))
		return nil
	}
	r.Target = name
	if name == spec.Template {
		r.Outcome = UpToDate
		return nil
	}
	next := maps.Clone(value)
	next["template"] = name
	return r.patch(value, next)
}
