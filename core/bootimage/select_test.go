package bootimage_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

func machineSet(name string, labels map[string]string) *machinev1beta1.MachineSet {
	return &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: bootimage.MachineAPINamespace, Labels: labels}}
}

func manager(mode operatorv1.MachineManagerSelectorMode, selector *metav1.LabelSelector) operatorv1.MachineManager {
	m := operatorv1.MachineManager{
		Resource:  operatorv1.MachineSets,
		APIGroup:  operatorv1.MachineAPI,
		Selection: operatorv1.MachineManagerSelector{Mode: mode},
	}
	if selector != nil {
		m.Selection.Partial = &operatorv1.PartialSelector{MachineResourceSelector: selector}
	}
	return m
}

func selectedNames(s bootimage.Selection) []string {
	var out []string
	for _, ms := range s.Selected {
		out = append(out, ms.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	owned := machineSet("owned", map[string]string{"region": "east"})
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "ClusterAutoscaler", Name: "default"}}
	windows := machineSet("windows", map[string]string{"region": "east"})
	windows.Spec.Template.Labels = map[string]string{bootimage.OSIDLabel: bootimage.OSIDWindows}
	sets := []*machinev1beta1.MachineSet{
		machineSet("west-b", map[string]string{"region": "west", "tier": "gpu"}),
		machineSet("east-a", map[string]string{"region": "east", "update-boot-image": "true"}),
		machineSet("plain", nil),
		owned,
		windows,
	}
	cpms := operatorv1.MachineManager{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.None}}
	tests := []struct {
		name        string
		platform    configv1.PlatformType
		managers    []operatorv1.MachineManager
		mode        operatorv1.MachineManagerSelectorMode
		defaulted   bool
		selected    []string
		skipped     []string
		notSelected []string
	}{
		{
			name: "All", platform: configv1.GCPPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.All, nil)},
			mode:     operatorv1.All, selected: []string{"east-a", "plain", "west-b"}, skipped: []string{"owned", "windows"},
		},
		{
			name: "None", platform: configv1.AWSPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.None, nil)},
			mode:     operatorv1.None, notSelected: []string{"east-a", "owned", "plain", "west-b", "windows"},
		},
		{
			name: "Partial by label", platform: configv1.AWSPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}})},
			mode:     operatorv1.Partial, selected: []string{"east-a"}, skipped: []string{"owned", "windows"}, notSelected: []string{"plain", "west-b"},
		},
		{
			name: "Partial by expression", platform: configv1.AWSPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.Partial, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpExists},
			}})},
			mode: operatorv1.Partial, selected: []string{"west-b"}, notSelected: []string{"east-a", "owned", "plain", "windows"},
		},
		{
			name: "Partial with the docs' label", platform: configv1.GCPPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: map[string]string{"update-boot-image": "true"}})},
			mode:     operatorv1.Partial, selected: []string{"east-a"}, notSelected: []string{"owned", "plain", "west-b", "windows"},
		},
		{
			name: "an empty Partial selector selects everything", platform: configv1.AWSPlatformType,
			managers: []operatorv1.MachineManager{manager(operatorv1.Partial, &metav1.LabelSelector{})},
			mode:     operatorv1.Partial, selected: []string{"east-a", "plain", "west-b"}, skipped: []string{"owned", "windows"},
		},
		{
			name: "default on AWS is All", platform: configv1.AWSPlatformType,
			mode: operatorv1.All, defaulted: true, selected: []string{"east-a", "plain", "west-b"}, skipped: []string{"owned", "windows"},
		},
		{
			name: "default on GCP is All, other resources do not count", platform: configv1.GCPPlatformType,
			managers: []operatorv1.MachineManager{cpms},
			mode:     operatorv1.All, defaulted: true, selected: []string{"east-a", "plain", "west-b"}, skipped: []string{"owned", "windows"},
		},
		{
			name: "default elsewhere is None", platform: configv1.BareMetalPlatformType,
			mode: operatorv1.None, defaulted: true, notSelected: []string{"east-a", "owned", "plain", "west-b", "windows"},
		},
		{
			name: "an explicit mode wins over the default", platform: configv1.VSpherePlatformType,
			managers: []operatorv1.MachineManager{cpms, manager(operatorv1.All, nil)},
			mode:     operatorv1.All, selected: []string{"east-a", "plain", "west-b"}, skipped: []string{"owned", "windows"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := bootimage.Select(tt.platform, tt.managers, sets)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Mode != tt.mode || sel.Defaulted != tt.defaulted {
				t.Errorf("mode = %s (defaulted %t), want %s (%t)", sel.Mode, sel.Defaulted, tt.mode, tt.defaulted)
			}
			if got := selectedNames(sel); !slices.Equal(got, tt.selected) {
				t.Errorf("selected = %v, want %v", got, tt.selected)
			}
			var skipped []string
			for _, s := range sel.Skipped {
				skipped = append(skipped, s.MachineSet)
			}
			if !slices.Equal(skipped, tt.skipped) {
				t.Errorf("skipped = %v, want %v", skipped, tt.skipped)
			}
			if !slices.Equal(sel.NotSelected, tt.notSelected) {
				t.Errorf("not selected = %v, want %v", sel.NotSelected, tt.notSelected)
			}
		})
	}
}

func TestSelectSkipMessages(t *testing.T) {
	owned := machineSet("owned", nil)
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "md-1"}}
	windows := machineSet("win", nil)
	windows.Spec.Template.Labels = map[string]string{bootimage.OSIDLabel: bootimage.OSIDWindows}
	sel, err := bootimage.Select(configv1.AWSPlatformType, nil, []*machinev1beta1.MachineSet{windows, owned})
	if err != nil {
		t.Fatal(err)
	}
	want := []bootimage.Skip{
		{MachineSet: "owned", Reason: bootimage.SkipOwnerReference, Message: "owned by MachineDeployment md-1, which manages it; boot images are left to its owner"},
		{MachineSet: "win", Reason: bootimage.SkipWindows, Message: "its machines run Windows (template label machine.openshift.io/os-id=Windows); only RHCOS boot images are managed"},
	}
	if !reflect.DeepEqual(sel.Skipped, want) {
		t.Errorf("skipped = %+v, want %+v", sel.Skipped, want)
	}
	if got, want := bootimage.Summary(sel.Skipped), "2 skipped: owned (owned by MachineDeployment md-1, which manages it; boot images are left to its owner), win (its machines run Windows (template label machine.openshift.io/os-id=Windows); only RHCOS boot images are managed)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestSelectErrors(t *testing.T) {
	tests := []struct {
		name    string
		manager operatorv1.MachineManager
		want    string
	}{
		{"Partial without a selector", manager(operatorv1.Partial, nil),
			"machineconfiguration cluster: spec.managedBootImages.machineManagers[0].selection: mode Partial needs partial.machineResourceSelector"},
		{"Partial with a bad operator", manager(operatorv1.Partial, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}),
			`machineconfiguration cluster: spec.managedBootImages.machineManagers[0].selection.partial.machineResourceSelector: "Near" is not a valid label selector operator`},
		{"partial with mode All", manager(operatorv1.All, &metav1.LabelSelector{}),
			`selection: partial is set but mode is "All"; set mode Partial or remove partial`},
		{"unknown mode", manager("Some", nil),
			`selection.mode "Some" is not one of All, None, Partial`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bootimage.Select(configv1.AWSPlatformType, []operatorv1.MachineManager{tt.manager}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEffectiveManagers(t *testing.T) {
	cpms := operatorv1.MachineManager{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}
	tests := []struct {
		name     string
		platform configv1.PlatformType
		spec     []operatorv1.MachineManager
		want     []operatorv1.MachineManager
	}{
		{"AWS default", configv1.AWSPlatformType, nil, []operatorv1.MachineManager{manager(operatorv1.All, nil)}},
		{"GCP default next to a CPMS entry", configv1.GCPPlatformType, []operatorv1.MachineManager{cpms}, []operatorv1.MachineManager{cpms, manager(operatorv1.All, nil)}},
		{"Azure default", configv1.AzurePlatformType, nil, []operatorv1.MachineManager{manager(operatorv1.None, nil)}},
		{"the spec's own entry", configv1.AWSPlatformType, []operatorv1.MachineManager{manager(operatorv1.None, nil)}, []operatorv1.MachineManager{manager(operatorv1.None, nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bootimage.EffectiveManagers(tt.platform, tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EffectiveManagers = %+v, want %+v", got, tt.want)
			}
		})
	}
}
