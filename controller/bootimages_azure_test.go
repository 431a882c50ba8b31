package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// waitSkew waits until MachineConfiguration/cluster's skew condition has status and a
// message containing msg, and returns the object.
func waitSkew(t *testing.T, status metav1.ConditionStatus, msg string) *operatorv1.MachineConfiguration {
	t.Helper()
	var cfg *operatorv1.MachineConfiguration
	kubetest.Eventually(t, 30*time.Second, "skew condition "+string(status), func() (bool, string) {
		var err error
		cfg, err = env.Operator.OperatorV1().MachineConfigurations().Get(kubetest.Context(t), bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionSkew)
		if c == nil {
			return false, "no skew condition yet"
		}
		return c.Status == status && strings.Contains(c.Message, msg), string(c.Status) + " " + c.Reason + ": " + c.Message
	})
	return cfg
}

// TestBootImagesAzureVSphereSkew runs the loop on Azure: an Azure MachineSet whose
// image was uploaded at install time (a gallery resource ID, Hyper-V gen2) moves to the
// stream's unpaid marketplace image as MCO patches it; a vSphere MachineSet is skipped
// saying that the OVA upload is out of reach; the skew is reported in status and in
// the condition, first from the install version (the skip leaves skew), then from the
// stream's release once every MachineSet is updated, then from a Manual spec.
func TestBootImagesAzureVSphereSkew(t *testing.T) {
	ctx := kubetest.Context(t)
	ensureNamespace(t, bootimage.MachineAPINamespace)
	ensureNamespace(t, bootimage.ConfigMapNamespace)
	cms := env.Kube.CoreV1().ConfigMaps(bootimage.ConfigMapNamespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.ConfigMapName},
		Data:       map[string]string{bootimage.StreamKey: string(readBootData(t, "stream.json")), bootimage.ReleaseVersionKey: "4.18.1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), bootimage.ConfigMapName, metav1.DeleteOptions{}) })
	secrets := env.Kube.CoreV1().Secrets(bootimage.MachineAPINamespace)
	if _, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: userData},
		Data:       map[string][]byte{bootimage.UserDataKey: readBootData(t, "stub-2.2.json")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), userData, metav1.DeleteOptions{}) })
	machineSets := env.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace)
	for _, ms := range []*machinev1beta1.MachineSet{
		loadMachineSet(t, "azure-machineset.yaml", "azure", nil),
		loadMachineSet(t, "vsphere-machineset.yaml", "vsphere", func(ms *machinev1beta1.MachineSet) {
			ms.Annotations = map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}
		}),
	} {
		if _, err := machineSets.Create(ctx, ms, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create machineset %s: %v", ms.Name, err)
		}
		t.Cleanup(func() { _ = machineSets.Delete(context.Background(), ms.Name, metav1.DeleteOptions{}) })
	}
	startController(t, "lease-boot-azure", "boot-azure", func(c *controller.Config) { c.Platform = configv1.AzurePlatformType })
	// Azure's default mode is None (boot images are opt-in there, as in MCO 4.21).
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.All})

	waitBootStatus(t,
		"Reconciled 1 of 2 MAPI MachineSets (1 skipped) | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments",
		"0 Degraded MAPI MachineSets")
	ms, err := machineSets.Get(ctx, "azure", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image  map[string]any `json:"image"`
		VMSize string         `json:"vmSize"`
	}
	if err := json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": "418-v2", "version": "418.94.20250210", "resourceID": "", "type": "MarketplaceNoPlan"}
	if len(v.Image) != len(want) || v.VMSize != "Standard_D4s_v3" {
		t.Errorf("azure providerSpec after the sync: image %v vmSize %q, want image %v and the rest kept", v.Image, v.VMSize, want)
	}
	for k, w := range want {
		if v.Image[k] != w {
			t.Errorf("azure image.%s = %v, want %v", k, v.Image[k], w)
		}
	}
	vs, err := machineSets.Get(ctx, "vsphere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(vs.Spec.Template.Spec.ProviderSpec.Value.Raw), `"template":"ci-op-vs-4c7d2-rhcos-generated-region-generated-zone"`) {
		t.Errorf("the vSphere MachineSet changed: %s", vs.Spec.Template.Spec.ProviderSpec.Value.Raw)
	}
	kubetest.Eventually(t, 20*time.Second, "an event says the OVA upload is out of reach", func() (bool, string) {
		evs, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cluster,reason=BootImagesSkipped"})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "vsphere (a vSphere boot image is a template made in vCenter from the stream's OVA, and mcotui does not reach vCenter") &&
				strings.Contains(e.Message, "rhcos-418.94.202502100215-0-vmware.x86_64.ova") {
				return true, ""
			}
			msgs = append(msgs, e.Message)
		}
		return false, strings.Join(msgs, "; ")
	})

	// The skipped vSphere MachineSet may boot an old image: the record falls back to the
	// install version, unknown without a ClusterVersion, so skew is reported.
	cfg := waitSkew(t, metav1.ConditionTrue, "the cluster is using OCP boot image version 0.0.0, which is below the minimum required version 4.13.0")
	if c := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionSkew); !strings.Contains(c.Message, "because MachineSets were left alone: 1 skipped: vsphere (a vSphere boot image is a template made in vCenter from the stream's OVA, and mcotui does not reach vCenter: it can neither upload the OVA") {
		t.Errorf("the skew condition does not say why the vSphere MachineSet is left alone: %s", c.Message)
	}
	if s := cfg.Status.BootImageSkewEnforcementStatus; s.Mode != operatorv1.BootImageSkewEnforcementModeStatusAutomatic || s.Automatic.OCPVersion != "0.0.0" {
		t.Errorf("status.bootImageSkewEnforcementStatus = %+v, want Automatic 0.0.0", s)
	}

	// Without it every MachineSet boots the stream's image: the release is recorded.
	if err := machineSets.Delete(ctx, "vsphere", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg = waitSkew(t, metav1.ConditionFalse, "OCP boot image version 4.18.1 is within the limit 4.13.0")
	if s := cfg.Status.BootImageSkewEnforcementStatus; s.Mode != operatorv1.BootImageSkewEnforcementModeStatusAutomatic || s.Automatic.OCPVersion != "4.18.1" {
		t.Errorf("status.bootImageSkewEnforcementStatus = %+v, want Automatic 4.18.1", s)
	}

	// A Manual spec is taken as it is.
	mcs := env.Operator.OperatorV1().MachineConfigurations()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeManual,
			Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: "4.12.0"}}
		_, err = mcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cfg = waitSkew(t, metav1.ConditionTrue, "the cluster is using OCP boot image version 4.12.0, which is below the minimum required version 4.13.0")
	if s := cfg.Status.BootImageSkewEnforcementStatus; s.Mode != operatorv1.BootImageSkewEnforcementModeStatusManual || s.Manual.OCPVersion != "4.12.0" {
		t.Errorf("status.bootImageSkewEnforcementStatus = %+v, want Manual 4.12.0", s)
	}
}
