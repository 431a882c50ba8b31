package bootimage

import (
	"encoding/json"
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// OSStreamLabel marks a MachineSet or ControlPlaneMachineSet with the OS image stream
// its machines boot; MCO manages boot images only for the rhel-9 stream (or no label).
const OSStreamLabel = "machineconfiguration.openshift.io/osstream"

// SupportedOSStream is the one stream whose boot images MCO manages.
const SupportedOSStream = "rhel-9"

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
	if s := cpms.Labels[OSStreamLabel]; s != "" && s != SupportedOSStream {
		return r.skipped(SkipOSStream, fmt.Sprintf("label %s=%s: boot images are managed for the %s stream only", OSStreamLabel, s, SupportedOSStream)), nil
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
	// MCO's checkControlPlaneMachineSet: vSphere's CPMS template "seems to be empty in
	// CI runs", so only these three are reconciled.
	switch opts.Platform {
	case configv1.AWSPlatformType, configv1.AzurePlatformType, configv1.GCPPlatformType:
	default:
		return r.skipped(SkipUnsupportedPlatform, fmt.Sprintf("platform %s: MCO manages ControlPlaneMachineSet boot images on AWS, Azure and GCP only", opts.Platform)), nil
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

// CPMSReport is the boot image check of the ControlPlaneMachineSets: the mode of
// their machine manager and, with All, each one's decision.
type CPMSReport struct {
	Mode operatorv1.MachineManagerSelectorMode
	// Results are the enrolled ControlPlaneMachineSets' decisions; Errors their
	// failures and the mode's refusal, worded as MCO's Degraded message words them
	// (CPMSSyncError).
	Results []Result
	Errors  []error
	// Total is how many the mode enrolls.
	Total int
}

// CheckCPMS decides the boot image of each ControlPlaneMachineSet that managers
// enroll (CPMSMode: All enrolls every one, None none), against stream, as MCO's
// syncControlPlaneMachineSets does; streamErr says why there is no stream, an error of
// each enrolled one as in MCO. A refused mode (Partial) is an error of the sync.
func CheckCPMS(managers []operatorv1.MachineManager, cpmss []*machinev1.ControlPlaneMachineSet, stream *Stream, streamErr error, opts Options) CPMSReport {
	mode, err := CPMSMode(managers)
	if err != nil {
		return CPMSReport{Mode: mode, Errors: []error{err}}
	}
	r := CPMSReport{Mode: mode}
	if mode != operatorv1.All {
		return r
	}
	r.Total = len(cpmss)
	for _, c := range cpmss {
		if streamErr != nil {
			r.Errors = append(r.Errors, CPMSSyncError(c.Name, streamErr))
			continue
		}
		res, err := ReconcileCPMS(c, stream, opts)
		if err != nil {
			r.Errors = append(r.Errors, CPMSSyncError(c.Name, err))
			continue
		}
		r.Results = append(r.Results, res)
	}
	return r
}

// Stats are the counts of the sync once every patch is applied. MCO counts a
// ControlPlaneMachineSet left alone as reconciled and never as skipped.
func (r CPMSReport) Stats() Stats {
	errored := r.Total - len(r.Results)
	if r.Total == 0 && len(r.Errors) > 0 {
		errored = 0 // the mode's refusal: none enrolled
	}
	return Stats{Total: r.Total, Reconciled: len(r.Results), Errored: errored}
}

// Patches are the results whose ControlPlaneMachineSet must be patched.
func (r CPMSReport) Patches() []Result { return patches(r.Results) }

// CPMSSyncError is how MCO words the failure of one ControlPlaneMachineSet in the
// Degraded message (cpms_helpers.go syncControlPlaneMachineSets).
func CPMSSyncError(name string, err error) error {
	return fmt.Errorf("error syncing ControlPlaneMachineSet %s: %w", name, err)
}

// CPMSHotLoopError is MCO's refusal to patch a ControlPlaneMachineSet that something
// keeps reverting (checkControlPlaneMachineSetHotLoop, after HotLoopLimit identical
// patches in a row).
func CPMSHotLoopError(name string) error {
	return fmt.Errorf("refusing to reconcile ControlPlaneMachineSet %s, hot loop detected. Please opt-out of boot image updates, adjust your machine provisioning workflow to prevent hot loops and opt back in to resume boot image updates", name)
}
