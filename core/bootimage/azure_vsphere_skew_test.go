package bootimage_test

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

var azure = bootimage.Options{Platform: configv1.AzurePlatformType, DefaultArch: "x86_64"}

func azureMachineSet(t *testing.T, image map[string]any) *machinev1beta1.MachineSet {
	ms := loadMachineSet(t, "azure-machineset.yaml")
	if image != nil {
		editProviderSpec(t, ms, func(v map[string]any) { v["image"] = image })
	}
	return ms
}

// TestReconcileAzure: one case per rule of MCO's reconcileAzureProviderSpec.
func TestReconcileAzure(t *testing.T) {
	market := func(pub, offer, sku, version, typ string) map[string]any {
		return map[string]any{"publisher": pub, "offer": offer, "sku": sku, "version": version, "resourceID": "", "type": typ}
	}
	tests := []struct {
		name    string
		ms      func(t *testing.T) *machinev1beta1.MachineSet
		outcome bootimage.Outcome
		target  string // the URN, or the skip reason
	}{
		{"uploaded gen2 image moves to the unpaid gen2 image", func(t *testing.T) *machinev1beta1.MachineSet { return azureMachineSet(t, nil) },
			bootimage.Patch, "azureopenshift:aro4:418-v2:418.94.20250210"},
		{"uploaded gen1 image moves to the unpaid gen1 image", func(t *testing.T) *machinev1beta1.MachineSet {
			return azureMachineSet(t, map[string]any{"resourceID": "/resourceGroups/rg/providers/Microsoft.Compute/images/ci-op-az-8k2xq", "publisher": "", "offer": "", "sku": "", "version": ""})
		}, bootimage.Patch, "azureopenshift:aro4:aro_418:418.94.20250210"},
		{"an old unpaid v2 image", func(t *testing.T) *machinev1beta1.MachineSet {
			return azureMachineSet(t, market("azureopenshift", "aro4", "416-v2", "416.94.20240701", "MarketplaceNoPlan"))
		}, bootimage.Patch, "azureopenshift:aro4:418-v2:418.94.20250210"},
		{"the unpaid target itself", func(t *testing.T) *machinev1beta1.MachineSet {
			return azureMachineSet(t, market("azureopenshift", "aro4", "418-v2", "418.94.20250210", "MarketplaceNoPlan"))
		}, bootimage.UpToDate, "azureopenshift:aro4:418-v2:418.94.20250210"},
		{"a paid OCP gen1 image keeps its offering and generation", func(t *testing.T) *machinev1beta1.MachineSet {
			return azureMachineSet(t, market("redhat", "rh-ocp-worker", "rh-ocp-worker-gen1", "4.16.2024070100", "MarketplaceWithPlan"))
		}, bootimage.Patch, "redhat:rh-ocp-worker:rh-ocp-worker-gen1:4.18.2025021002"},
		{"a paid EMEA image", func(t *testing.T) *machinev1beta1.MachineSet {
			return azureMachineSet(t, market("redhat-limited", "rh-ocp-worker", "rh-ocp-worker", "4.16.2024070100", "MarketplaceWithPlan"))
		}, bootimage.Patch, "redhat-limited:rh-ocp-worker:rh-ocp-worker:4.18.2025021002"},
		{"a security type", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := azureMachineSet(t, nil)
			editProviderSpec(t, ms, func(v map[string]any) {
				v["securityProfile"] = map[string]any{"settings": map[string]any{"securityType": "TrustedLaunch", "trustedLaunch": map[string]any{"uefiSettings": map[string]any{}}}}
			})
			return ms
		}, bootimage.Skipped, string(bootimage.SkipSecurityType)},
		{"s390x", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := azureMachineSet(t, nil)
			ms.Annotations[bootimage.ArchAnnotation] = "kubernetes.io/arch=s390x"
			return ms
		}, bootimage.Skipped, string(bootimage.SkipUnsupportedArch)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reconcile(t, tt.ms(t), azure)
			got := r.Target
			if r.Outcome == bootimage.Skipped {
				got = string(r.Skip.Reason)
			}
			if r.Outcome != tt.outcome || got != tt.target {
				t.Errorf("outcome %s %q, want %s %q (%+v)", r.Outcome, got, tt.outcome, tt.target, r)
			}
			if r.Outcome == bootimage.Patch && (!strings.Contains(string(r.ProviderSpec), `"resourceID":""`) || r.UserDataSecret != "worker-user-data") {
				t.Errorf("patch %s, user data %q", r.Patch, r.UserDataSecret)
			}
		})
	}

	// An image MCO cannot place in an offering is an error naming the fields.
	_, err := bootimage.Reconcile(azureMachineSet(t, market("someone", "custom", "x", "1", "MarketplaceWithPlan")), loadStream(t), azure)
	if err == nil || !strings.Contains(err.Error(), `could not determine azure marketplace variant, cannot update boot images: providerSpec.value.image has publisher "someone" and offer "custom"`) {
		t.Errorf("custom image: %v", err)
	}
	// A stream without marketplace images (OKD) skips.
	okd, err := bootimage.ParseStream([]byte(`{"stream": "okd", "architectures": {"x86_64": {"images": {}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := bootimage.Reconcile(azureMachineSet(t, nil), okd, azure); err != nil || r.Skip.Reason != bootimage.SkipNoMarketplace {
		t.Errorf("OKD stream: %+v, %v", r, err)
	}
}

type templates map[string]string // release -> template name

func (ts templates) TemplateFor(_ machinev1beta1.Workspace, release string) (string, error) {
	return ts[release], nil
}

// TestReconcileVSphere: without vCenter, and with a vCenter that has or lacks a
// template of the stream's release.
func TestReconcileVSphere(t *testing.T) {
	vs := bootimage.Options{Platform: configv1.VSpherePlatformType, DefaultArch: "x86_64"}
	ms := loadMachineSet(t, "vsphere-machineset.yaml")
	r := reconcile(t, ms, vs)
	if r.Outcome != bootimage.Skipped || r.Skip.Reason != bootimage.SkipNoVCenter ||
		!strings.Contains(r.Skip.Message, "mcotui does not reach vCenter") || !strings.Contains(r.Skip.Message, "rhcos-418.94.202502100215-0-vmware.x86_64.ova") {
		t.Errorf("without vCenter: %+v", r)
	}
	vs.VSphereTemplates = templates{}
	if r := reconcile(t, ms, vs); r.Skip.Reason != bootimage.SkipNoTemplate || !strings.Contains(r.Skip.Message, "uploading the OVA is out of reach of mcotui") {
		t.Errorf("no template: %+v", r)
	}
	vs.VSphereTemplates = templates{"418.94.202502100215-0": "rhcos-418-template"}
	r = reconcile(t, ms, vs)
	if r.Outcome != bootimage.Patch || string(r.Patch) != `{"spec":{"template":{"spec":{"providerSpec":{"value":{"template":"rhcos-418-template"}}}}}}` {
		t.Errorf("with a template: %+v %s", r, r.Patch)
	}
	vs.VSphereTemplates = templates{"418.94.202502100215-0": "ci-op-vs-4c7d2-rhcos-generated-region-generated-zone"}
	if r := reconcile(t, ms, vs); r.Outcome != bootimage.UpToDate {
		t.Errorf("the template it names: %+v", r)
	}
}

func archNode(name, role, label, info string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if role != "" {
		n.Labels["node-role.kubernetes.io/"+role] = ""
	}
	if label != "" {
		n.Labels[corev1.LabelArchStable] = label
	}
	n.Status.NodeInfo.Architecture = info
	return n
}

// TestClusterArch: MCO's default, the control plane's architecture, from labels or
// nodeInfo, and what is missing when there is none.
func TestClusterArch(t *testing.T) {
	tests := []struct {
		name          string
		nodes         []*corev1.Node
		arch, missing string
	}{
		{"labelled control plane", []*corev1.Node{archNode("cp", "control-plane", "arm64", ""), archNode("w", "worker", "amd64", "")}, "aarch64", ""},
		{"no labels, nodeInfo only", []*corev1.Node{archNode("cp", "control-plane", "", "amd64"), archNode("w", "worker", "", "amd64")}, "x86_64", ""},
		{"no architecture anywhere", []*corev1.Node{archNode("cp", "control-plane", "", ""), archNode("w", "worker", "", "")}, "", "no node says its architecture"},
		{"no nodes", nil, "", "the cluster has no nodes"},
		{"a multi-architecture control plane", []*corev1.Node{archNode("a", "master", "amd64", ""), archNode("b", "master", "arm64", "")}, "", "the control plane nodes have several architectures (aarch64, x86_64)"},
		{"no control plane, mixed workers", []*corev1.Node{archNode("a", "worker", "amd64", ""), archNode("b", "worker", "arm64", "")}, "", "no node is labelled node-role.kubernetes.io/control-plane and the nodes have several architectures"},
	}
	for _, tt := range tests {
		arch, missing := bootimage.ClusterArch(tt.nodes)
		if arch != tt.arch || !strings.Contains(missing, tt.missing) || (tt.missing == "") != (missing == "") {
			t.Errorf("%s: ClusterArch = %q, %q; want %q, %q", tt.name, arch, missing, tt.arch, tt.missing)
		}
	}
}

// TestSkew: the mode MCO derives, what a sync records, and the check against the limits.
func TestSkew(t *testing.T) {
	all := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}
	partial := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.Partial}}}
	none := operatorv1.BootImageSkewEnforcementStatus{}
	manual := operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeManual,
		Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: "4.14.2"}}
	statuses := []struct {
		name string
		got  operatorv1.BootImageSkewEnforcementStatus
		mode operatorv1.BootImageSkewEnforcementModeStatus
		ocp  string
	}{
		{"Manual spec", bootimage.SkewStatus(manual, none, configv1.AWSPlatformType, all, "4.10.3"), operatorv1.BootImageSkewEnforcementModeStatusManual, "4.14.2"},
		{"None spec", bootimage.SkewStatus(operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeNone}, none, configv1.AWSPlatformType, all, ""), operatorv1.BootImageSkewEnforcementModeStatusNone, ""},
		{"AWS, All: Automatic from the install version", bootimage.SkewStatus(operatorv1.BootImageSkewEnforcementConfig{}, none, configv1.AWSPlatformType, all, "4.10.3-rc.1"), operatorv1.BootImageSkewEnforcementModeStatusAutomatic, "4.10.3"},
		{"AWS, Partial: Manual", bootimage.SkewStatus(operatorv1.BootImageSkewEnforcementConfig{}, none, configv1.AWSPlatformType, partial, "4.10.3"), operatorv1.BootImageSkewEnforcementModeStatusManual, "4.10.3"},
		{"no platform: Manual, unknown install version", bootimage.SkewStatus(operatorv1.BootImageSkewEnforcementConfig{}, none, "", all, ""), operatorv1.BootImageSkewEnforcementModeStatusManual, "0.0.0"},
	}
	for _, s := range statuses {
		ocp := s.got.Automatic.OCPVersion + s.got.Manual.OCPVersion
		if s.got.Mode != s.mode || ocp != s.ocp {
			t.Errorf("%s: %+v, want %s %s", s.name, s.got, s.mode, s.ocp)
		}
	}

	auto := bootimage.SkewStatus(operatorv1.BootImageSkewEnforcementConfig{}, none, configv1.AzurePlatformType, all, "4.12.0")
	clean := bootimage.Stats{Total: 2, Reconciled: 2}
	if got := bootimage.RecordSync(auto, clean, "4.18.1-x86_64", "4.12.0"); got.Automatic.OCPVersion != "4.18.1" {
		t.Errorf("clean sync records %+v", got.Automatic)
	}
	custom := bootimage.Stats{Total: 2, Reconciled: 2, Skipped: []bootimage.Skip{{MachineSet: "a", Reason: bootimage.SkipCustomImage}}}
	if got := bootimage.RecordSync(bootimage.RecordSync(auto, clean, "4.18.1", "4.12.0"), custom, "4.18.1", "4.12.0"); got.Automatic.OCPVersion != "4.12.0" {
		t.Errorf("a custom image resets to the install version: %+v", got.Automatic)
	}
	windows := bootimage.Stats{Total: 2, Reconciled: 2, Skipped: []bootimage.Skip{{MachineSet: "w", Reason: bootimage.SkipWindows}}}
	if got := bootimage.RecordSync(auto, windows, "4.18.1", "4.12.0"); got.Automatic.OCPVersion != "4.18.1" {
		t.Errorf("a Windows MachineSet leaves no skew: %+v", got.Automatic)
	}
	failed := bootimage.Stats{Total: 2, Reconciled: 1, Errored: 1}
	if got := bootimage.RecordSync(auto, failed, "4.18.1", "4.12.0"); got != auto {
		t.Errorf("a failed sync changed the record: %+v", got)
	}

	checks := []struct {
		name     string
		status   operatorv1.BootImageSkewEnforcementStatus
		exceeded bool
		msg      string
	}{
		{"OCP below", auto, true, "the cluster is using OCP boot image version 4.12.0, which is below the minimum required version 4.13.0"},
		{"OCP at the limit", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic, Automatic: operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.13.0"}}, false, "within the limit"},
		{"RHCOS below", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual, Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "9.0.20220510-0"}}, true, "RHCOS boot image version 9.0.20220510-0(RHEL version: 9.0), which is below the minimum required RHEL version 9.2"},
		{"legacy RHCOS below", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual, Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "48.84.202208021106-0"}}, true, "(RHEL version: 8.4)"},
		{"legacy RHCOS within", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual, Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "418.94.202502100215-0"}}, false, "(RHEL 9.4) is within the limit 9.2"},
		{"None", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusNone}, false, "not checked"},
	}
	for _, c := range checks {
		sk := bootimage.CheckSkew(c.status)
		if sk.Exceeded != c.exceeded || !strings.Contains(sk.Message, c.msg) {
			t.Errorf("%s: %+v, want exceeded %t and %q", c.name, sk, c.exceeded, c.msg)
		}
	}
	conds := bootimage.SetSkewCondition(nil, bootimage.CheckSkew(auto), true, metav1.Now())
	if len(conds) != 1 || conds[0].Status != metav1.ConditionUnknown || conds[0].Reason != bootimage.ReasonSkewSyncIncomplete {
		t.Errorf("incomplete sync: %+v", conds)
	}
}
