package bootimage

import (
	"cmp"
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Names MCO uses for the objects around boot images.
const (
	// MachineAPINamespace holds the MachineSets and their user-data secrets.
	MachineAPINamespace = "openshift-machine-api"
	// ConfigMapNamespace and ConfigMapName locate the ConfigMap of target images.
	ConfigMapNamespace = "openshift-machine-config-operator"
	ConfigMapName      = "coreos-bootimages"
	// MachineConfigurationName is the one MachineConfiguration MCO reads: it holds the
	// boot image modes, and the node disruption policy too.
	MachineConfigurationName = "cluster"

	// OSIDLabel on a MachineSet's machine template names its OS; MCO leaves Windows
	// MachineSets alone.
	OSIDLabel = "machine.openshift.io/os-id"
	// OSIDWindows is the value of OSIDLabel for Windows.
	OSIDWindows = "Windows"
)

// DefaultMode is the mode MCO applies to Machine API MachineSets when
// MachineConfiguration/cluster does not name one: All on the platforms whose boot
// images it can update (here AWS and GCP), None elsewhere.
func DefaultMode(platform configv1.PlatformType) operatorv1.MachineManagerSelectorMode {
	switch platform {
	case configv1.AWSPlatformType, configv1.GCPPlatformType:
		return operatorv1.All
	}
	return operatorv1.None
}

// EffectiveManagers is what MachineConfiguration/cluster's
// status.managedBootImagesStatus.machineManagers should hold for spec, the spec's
// machineManagers: a copy of spec, with an entry for Machine API MachineSets in the
// platform's DefaultMode added when spec has none.
func EffectiveManagers(platform configv1.PlatformType, spec []operatorv1.MachineManager) []operatorv1.MachineManager {
	out := make([]operatorv1.MachineManager, 0, len(spec)+1)
	found := false
	for _, m := range spec {
		out = append(out, *m.DeepCopy())
		found = found || isMAPIMachineSets(m)
	}
	if !found {
		out = append(out, operatorv1.MachineManager{
			Resource:  operatorv1.MachineSets,
			APIGroup:  operatorv1.MachineAPI,
			Selection: operatorv1.MachineManagerSelector{Mode: DefaultMode(platform)},
		})
	}
	return out
}

func isMAPIMachineSets(m operatorv1.MachineManager) bool {
	return m.Resource == operatorv1.MachineSets && m.APIGroup == operatorv1.MachineAPI
}

// Selection is which Machine API MachineSets take part in boot image updates.
type Selection struct {
	// Mode is the mode in force; Defaulted says it is the platform's default because
	// no machine manager names Machine API MachineSets.
	Mode      operatorv1.MachineManagerSelectorMode
	Defaulted bool
	// Selected are the MachineSets the mode selects and that may be updated, by name.
	Selected []*machinev1beta1.MachineSet
	// Skipped are the MachineSets the mode selects that must be left alone.
	Skipped []Skip
	// NotSelected names the MachineSets the mode does not select.
	NotSelected []string
}

// Select applies the machine manager for Machine API MachineSets (resource machinesets,
// apiGroup machine.openshift.io) in managers, or the platform's DefaultMode, to
// machineSets, as MCO's getMachineResourceSelectorFromMachineManagers does: All selects
// every MachineSet, None none, Partial those whose labels match
// partial.machineResourceSelector. Of the selected, a MachineSet with an owner
// reference (managed by another workflow) or a Windows machine template is skipped.
//
// The error names the field of MachineConfiguration/cluster to fix.
func Select(platform configv1.PlatformType, managers []operatorv1.MachineManager, machineSets []*machinev1beta1.MachineSet) (Selection, error) {
	var sel Selection
	var selector labels.Selector
	var err error
	if sel.Mode, sel.Defaulted, selector, err = mapiMode(platform, managers); err != nil {
		return Selection{}, err
	}
	sorted := slices.Clone(machineSets)
	slices.SortFunc(sorted, func(a, b *machinev1beta1.MachineSet) int { return cmp.Compare(a.Name, b.Name) })
	for _, ms := range sorted {
		switch {
		case ms == nil:
		case !selector.Matches(labels.Set(ms.Labels)):
			sel.NotSelected = append(sel.NotSelected, ms.Name)
		default:
			if sk, skip := ineligible(ms); skip {
				sel.Skipped = append(sel.Skipped, sk)
				continue
			}
			sel.Selected = append(sel.Selected, ms)
		}
	}
	return sel, nil
}

// mapiMode is the mode in force for Machine API MachineSets: their machine manager's in
// managers, or the platform's DefaultMode (defaulted), and the label selector it
// amounts to.
func mapiMode(platform configv1.PlatformType, managers []operatorv1.MachineManager) (operatorv1.MachineManagerSelectorMode, bool, labels.Selector, error) {
	i := slices.IndexFunc(managers, isMAPIMachineSets)
	if i < 0 {
		mode := DefaultMode(platform)
		if mode == operatorv1.All {
			return mode, true, labels.Everything(), nil
		}
		return mode, true, labels.Nothing(), nil
	}
	selector, err := selectorOf(managers[i].Selection, i)
	return managers[i].Selection.Mode, false, selector, err
}

func selectorOf(s operatorv1.MachineManagerSelector, i int) (labels.Selector, error) {
	field := fmt.Sprintf("machineconfiguration %s: spec.managedBootImages.machineManagers[%d].selection", MachineConfigurationName, i)
	if s.Mode != operatorv1.Partial && s.Partial != nil {
		return nil, fmt.Errorf("%s: partial is set but mode is %q; set mode Partial or remove partial", field, s.Mode)
	}
	switch s.Mode {
	case operatorv1.All:
		return labels.Everything(), nil
	case operatorv1.None:
		return labels.Nothing(), nil
	case operatorv1.Partial:
		if s.Partial == nil || s.Partial.MachineResourceSelector == nil {
			return nil, fmt.Errorf("%s: mode Partial needs partial.machineResourceSelector, a label selector over MachineSet labels", field)
		}
		sel, err := metav1.LabelSelectorAsSelector(s.Partial.MachineResourceSelector)
		if err != nil {
			return nil, fmt.Errorf("%s.partial.machineResourceSelector: %w", field, err)
		}
		return sel, nil
	}
	return nil, fmt.Errorf("%s.mode %q is not one of All, None, Partial", field, s.Mode)
}

// ineligible says why MCO leaves a selected MachineSet alone, if it does.
func ineligible(ms *machinev1beta1.MachineSet) (Skip, bool) {
	if refs := ms.OwnerReferences; len(refs) > 0 {
		return Skip{MachineSet: ms.Name, Reason: SkipOwnerReference,
			Message: fmt.Sprintf("owned by %s %s, which manages it; boot images are left to its owner", refs[0].Kind, refs[0].Name)}, true
	}
	// MCO's syncMAPIMachineSet: boot images are managed for the rhel-9 stream only; a
	// MachineSet without the label predates dual streams and is managed.
	if st := ms.Labels[OSStreamLabel]; st != "" && st != SupportedOSStream {
		return Skip{MachineSet: ms.Name, Reason: SkipOSStream,
			Message: fmt.Sprintf("label %s=%s: boot images are managed for the %s stream only", OSStreamLabel, st, SupportedOSStream)}, true
	}
	if ms.Spec.Template.Labels[OSIDLabel] == OSIDWindows {
		return Skip{MachineSet: ms.Name, Reason: SkipWindows,
			Message: fmt.Sprintf("its machines run Windows (template label %s=%s); only RHCOS boot images are managed", OSIDLabel, OSIDWindows)}, true
	}
	return Skip{}, false
}

// DescribeSelection words a boot image mode as every surface shows it (the CLI's
// set-mode and dry run, the TUI's pane and its confirmation): the mode, and for
// Partial its selector, "Partial (region=east)" or "Partial (no selector)".
func DescribeSelection(s operatorv1.MachineManagerSelector) string {
	if s.Mode != operatorv1.Partial {
		return string(s.Mode)
	}
	sel := "no selector"
	if s.Partial != nil && s.Partial.MachineResourceSelector != nil {
		sel = metav1.FormatLabelSelector(s.Partial.MachineResourceSelector)
	}
	return "Partial (" + sel + ")"
}
