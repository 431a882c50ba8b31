package bootimage

import (
	"encoding/json"
	"fmt"
	"slices"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// OSStreamLabel marks a MachineSet or ControlPlaneMachineSet with the OS image stream
// its machines boot; MCO manages boot images only for the rhel-9 stream (or no label).
const OSStreamLabel = "machineconfiguration.openshift.io/osstream"

// SkipOSStream: the ControlPlaneMachineSet is labelled for another OS stream.
const SkipOSStream SkipReason = "OSStream"

// CPMSMode is the mode of the machine manager for ControlPlaneMachineSets
// (resource controlplanemachinesets, apiGroup machine.openshift.io) in managers: None
// without one, as MCO's operator defaults it. Partial is refused with the message of
// the CRD's CEL rule (ManagedBootImagesCPMS): the ControlPlaneMachineSet is a
// singleton, there is nothing to select among. The error names the field to fix.
func CPMSMode(managers []operatorv1.MachineManager) (operatorv1.MachineManagerSelectorMode, error) {
	i := slices.IndexFunc(managers, func(m operatorv1.MachineManager) bool {
		return m.Resource == operatorv1.ControlPlaneMachineSets && m.APIGroup == operatorv1.MachineAPI
	})
	if i < 0 {
		return operatorv1.None, nil
	}
	switch mode := managers[i].Selection.Mode; mode {
	case operatorv1.All, operatorv1.None:
		return mode, nil
	default:
		return "", fmt.Errorf("spec.managedBootImages.machineManagers[%d].selection.mode %q: Only All or None selection mode is permitted for ControlPlaneMachineSets; set All or None", i, mode)
	}
}

// ReconcileCPMS is Reconcile for a ControlPlaneMachineSet, as MCO's
// syncControlPlaneMachineSet does (pkg/controller/bootimage/cpms_helpers.go): one with
// an owner reference, a Windows machine template, or an OS stream label other than
// rhel-9 is skipped; otherwise its machine template's providerSpec is compared with the
// stream exactly as a MachineSet's, and Result.Patch is a JSON merge patch of the
// ControlPlaneMachineSet (spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec).
func ReconcileCPMS(cpms *machinev1.ControlPlaneMachineSet, stream *Stream, opts Options) (Result, error) {
	r := Result{MachineSet: cpms.Name}
	if refs := cpms.OwnerReferences; len(refs) > 0 {
		return r.skipped(SkipOwnerReference, fmt.Sprintf("owned by %s %s, which manages it; boot images are left to its owner", refs[0].Kind, refs[0].Name)), nil
	}
	if s := cpms.Labels[OSStreamLabel]; s != "" && s != "rhel-9" {
		return r.skipped(SkipOSStream, fmt.Sprintf("label %s=%s: boot images are managed for the rhel-9 stream only", OSStreamLabel, s)), nil
	}
	tmpl := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
	if tmpl == nil {
		return Result{}, fmt.Errorf("controlplanemachineset %s: spec.template has no machines_v1beta1_machine_openshift_io template", cpms.Name)
	}
	// The template as a MachineSet, so that every platform's rules apply unchanged.
	ms := &machinev1beta1.MachineSet{}
	ms.Name, ms.Annotations = cpms.Name, cpms.Annotations
	ms.Spec.Template.Labels = tmpl.ObjectMeta.Labels
	ms.Spec.Template.Spec = tmpl.Spec
	// As for MachineSets, the template's own platform wins over the cluster's.
	if p := PlatformOf(ms); p != "" {
		opts.Platform = p
	}
	res, err := Reconcile(ms, stream, opts)
	if err != nil || res.Outcome != Patch {
		return res, err
	}
	var p struct {
		Spec struct {
			Template struct {
				Spec json.RawMessage `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(res.Patch, &p); err != nil {
		return Result{}, fmt.Errorf("controlplanemachineset %s: %w", cpms.Name, err)
	}
	if res.Patch, err = json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"machines_v1beta1_machine_openshift_io": map[string]any{"spec": p.Spec.Template.Spec},
	}}}); err != nil {
		return Result{}, fmt.Errorf("controlplanemachineset %s: encoding the patch: %w", cpms.Name, err)
	}
	return res, nil
}
