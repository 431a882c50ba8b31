package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// Targets and current images of core/bootimage's testdata.
const (
	bootData    = "../core/bootimage/testdata/"
	awsTarget   = "ami-0e5d1a7b2c8f3e496" // x86_64, us-east-1
	awsOld      = "ami-0fe05b1aa8dacfa90"
	gcpTarget   = "projects/rhcos-cloud/global/images/rhcos-418-94-202502100215-0-gcp-x86-64"
	gcpOld      = "projects/rhcos-cloud/global/images/rhcos-412-85-202203181601-0-gcp-x86-64"
	userData    = "worker-user-data"
	badUserData = "bad-user-data"
)

func readBootData(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(bootData + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadMachineSet(t *testing.T, file, name string, edit func(*machinev1beta1.MachineSet)) *machinev1beta1.MachineSet {
	t.Helper()
	var ms machinev1beta1.MachineSet
	if err := yaml.UnmarshalStrict(readBootData(t, file), &ms); err != nil {
		t.Fatal(err)
	}
	ms.Name = name
	if edit != nil {
		edit(&ms)
	}
	return &ms
}

func ensureNamespace(t *testing.T, name string) { t.Helper(); ensureNamespaceIn(t, env, name) }

func ensureNamespaceIn(t *testing.T, e *kubetest.Env, name string) {
	t.Helper()
	_, err := e.Kube.CoreV1().Namespaces().Create(kubetest.Context(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// bootImageTargets creates the namespaces of the Machine API and of MCO and, there,
// the coreos-bootimages ConfigMap of core/bootimage's test stream (release 4.18.1),
// removed at the end.
func bootImageTargets(t *testing.T) { t.Helper(); bootImageTargetsIn(t, env) }

// bootImageTargetsIn is bootImageTargets on the control plane e.
func bootImageTargetsIn(t *testing.T, e *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	ensureNamespaceIn(t, e, bootimage.MachineAPINamespace)
	ensureNamespaceIn(t, e, bootimage.ConfigMapNamespace)
	cms := e.Kube.CoreV1().ConfigMaps(bootimage.ConfigMapNamespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.ConfigMapName},
		Data:       map[string]string{bootimage.StreamKey: string(readBootData(t, "stream.json")), "releaseVersion": "4.18.1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), bootimage.ConfigMapName, metav1.DeleteOptions{}) })
}

// bootImageCluster creates what a cluster with boot images has: the coreos-bootimages
// ConfigMap, the user-data secrets (a spec 2.2 stub, and one that cannot be converted),
// and five MachineSets: AWS (labelled for Partial), GCP, a Windows one and one owned
// by another object (both skipped), and an AWS one whose stub cannot be converted.
func bootImageCluster(t *testing.T) {
	t.Helper()
	ctx := kubetest.Context(t)
	bootImageTargets(t)

	secrets := env.Kube.CoreV1().Secrets(bootimage.MachineAPINamespace)
	bad := `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"path":"/etc/x","filesystem":"root"}]}}`
	for name, data := range map[string][]byte{userData: readBootData(t, "stub-2.2.json"), badUserData: []byte(bad)} {
		if _, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data:       map[string][]byte{bootimage.UserDataKey: data},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = secrets.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}

	sets := []*machinev1beta1.MachineSet{
		loadMachineSet(t, "aws-machineset.yaml", "aws", nil),
		loadMachineSet(t, "gcp-machineset.yaml", "gcp", func(ms *machinev1beta1.MachineSet) {
			ms.Annotations = map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}
		}),
		loadMachineSet(t, "aws-machineset.yaml", "win", func(ms *machinev1beta1.MachineSet) {
			delete(ms.Labels, "update-boot-image")
			ms.Spec.Template.Labels[bootimage.OSIDLabel] = bootimage.OSIDWindows
		}),
		loadMachineSet(t, "aws-machineset.yaml", "owned", func(ms *machinev1beta1.MachineSet) {
			delete(ms.Labels, "update-boot-image")
			ms.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0b9a3cf2-6c5e-4a7c-9d7e-3f1f6f0c2b11"}}
		}),
		loadMachineSet(t, "aws-machineset.yaml", "bad", func(ms *machinev1beta1.MachineSet) {
			delete(ms.Labels, "update-boot-image")
			editValue(t, ms, func(v map[string]any) { v["userDataSecret"] = map[string]any{"name": badUserData} })
		}),
	}
	machineSets := env.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace)
	for _, ms := range sets {
		if _, err := machineSets.Create(ctx, ms, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create machineset %s: %v", ms.Name, err)
		}
		t.Cleanup(func() { _ = machineSets.Delete(context.Background(), ms.Name, metav1.DeleteOptions{}) })
	}
}

func editValue(t *testing.T, ms *machinev1beta1.MachineSet, edit func(map[string]any)) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
}

// setMode creates or updates MachineConfiguration/cluster with one machine manager for
// Machine API MachineSets.
func setMode(t *testing.T, sel operatorv1.MachineManagerSelector) { t.Helper(); setModeIn(t, env, sel) }

// setModeIn is setMode on the control plane e.
func setModeIn(t *testing.T, e *kubetest.Env, sel operatorv1.MachineManagerSelector) {
	t.Helper()
	ctx := kubetest.Context(t)
	mcs := e.Operator.OperatorV1().MachineConfigurations()
	managers := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: sel}}
	_, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cfg := &operatorv1.MachineConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName},
			Spec: operatorv1.MachineConfigurationSpec{
				StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
				ManagedBootImages:     operatorv1.ManagedBootImages{MachineManagers: managers},
				NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{
					SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}},
				},
			},
		}
		if _, err := mcs.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = mcs.Delete(context.Background(), bootimage.MachineConfigurationName, metav1.DeleteOptions{})
		})
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// The controller writes the object's status meanwhile: the spec is written on the
	// latest version, as `kubectl edit` would after a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.ManagedBootImages.MachineManagers = managers
		_, err = mcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func machineSetImage(t *testing.T, name string) string {
	t.Helper()
	ms, err := env.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace).Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		AMI   struct{ ID string } `json:"ami"`
		Disks []struct {
			Boot  bool   `json:"boot"`
			Image string `json:"image"`
		} `json:"disks"`
	}
	if err := json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.AMI.ID != "" {
		return v.AMI.ID
	}
	for _, d := range v.Disks {
		if d.Boot {
			return d.Image
		}
	}
	return ""
}

// waitBootStatus waits until the conditions of MachineConfiguration/cluster carry the
// messages wanted, for the mode's generation.
func waitBootStatus(t *testing.T, progressing, degraded string) *operatorv1.MachineConfiguration {
	t.Helper()
	var cfg *operatorv1.MachineConfiguration
	kubetest.Eventually(t, 30*time.Second, "boot image conditions", func() (bool, string) {
		var err error
		cfg, err = env.Operator.OperatorV1().MachineConfigurations().Get(kubetest.Context(t), bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionProgressing)
		d := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionDegraded)
		if p == nil || d == nil {
			return false, "no conditions yet"
		}
		return p.Status == metav1.ConditionFalse && p.Message == progressing && strings.HasPrefix(d.Message, degraded),
			"Progressing=" + string(p.Status) + " " + p.Message + "; Degraded=" + string(d.Status) + " " + d.Message
	})
	return cfg
}

// TestBootImages runs the boot image loop through the three modes against MachineSets
// in the API server.
func TestBootImages(t *testing.T) {
	ctx := kubetest.Context(t)
	bootImageCluster(t)
	startController(t, "lease-boot", "boot-a")

	// None: nothing is selected, nothing changes.
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.None})
	cfg := waitBootStatus(t,
		"Reconciled 0 of 0 MAPI MachineSets | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments",
		"0 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments")
	if got := cfg.Status.ManagedBootImagesStatus.MachineManagers; len(got) != 1 || got[0].Selection.Mode != operatorv1.None {
		t.Errorf("status.managedBootImagesStatus = %+v", got)
	}
	if img := machineSetImage(t, "aws"); img != awsOld {
		t.Fatalf("mode None: aws boots %s", img)
	}

	// Partial: only the labelled AWS MachineSet; its stub is upgraded first.
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.Partial, Partial: &operatorv1.PartialSelector{
		MachineResourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"update-boot-image": "true"}},
	}})
	waitBootStatus(t,
		"Reconciled 1 of 1 MAPI MachineSets | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments",
		"0 Degraded MAPI MachineSets")
	if img := machineSetImage(t, "aws"); img != awsTarget {
		t.Errorf("mode Partial: aws boots %s, want %s", img, awsTarget)
	}
	if img := machineSetImage(t, "gcp"); img != gcpOld {
		t.Errorf("mode Partial: gcp (not selected) boots %s", img)
	}
	secret, err := env.Kube.CoreV1().Secrets(bootimage.MachineAPINamespace).Get(ctx, userData, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stub struct {
		Ignition struct{ Version string } `json:"ignition"`
	}
	if err := json.Unmarshal(secret.Data[bootimage.UserDataKey], &stub); err != nil || stub.Ignition.Version != "3.5.0" {
		t.Errorf("stub after the upgrade: version %q (%v):\n%s", stub.Ignition.Version, err, secret.Data[bootimage.UserDataKey])
	}
	if secret.Annotations[controller.StubUpgradedToAnnotation] != "3.5.0" || secret.Annotations[controller.StubUpgradedAtAnnotation] == "" {
		t.Errorf("stub secret annotations = %v", secret.Annotations)
	}

	// A Cluster API MachineDeployment beside them, on the old AMI.
	capiNS := capiAWSMachineDeployment(t)
	// All: GCP too; Windows and owned are skipped and counted; bad's stub cannot be
	// converted, which degrades; the MachineDeployment moves to a new template.
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.All})
	cfg = waitBootStatus(t,
		"Reconciled 3 of 5 MAPI MachineSets (1 skipped) | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments",
		"1 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments | Error(s): error syncing MAPI MachineSet bad: converting ignition stub failed")
	if d := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("Degraded = %s", d.Status)
	}
	if img := machineSetImage(t, "gcp"); img != gcpTarget {
		t.Errorf("mode All: gcp boots %s, want %s", img, gcpTarget)
	}
	for _, name := range []string{"win", "owned", "bad"} {
		if img := machineSetImage(t, name); img != awsOld {
			t.Errorf("mode All: %s boots %s, want it left at %s", name, img, awsOld)
		}
	}
	kubetest.Eventually(t, 30*time.Second, "the controller moves the MachineDeployment to a template of the target AMI", func() (bool, string) {
		state := capiState(t, capiNS)
		md := state["MachineDeployment aws-md"]
		_, tmpl, _ := strings.Cut(md, " -> ")
		return tmpl != "aws-old" && strings.HasSuffix(state["AWSMachineTemplate "+tmpl], awsTarget), fmt.Sprint(state)
	})
	// The skipped MachineSets are named, not only counted.
	kubetest.Eventually(t, 20*time.Second, "an event names the skipped MachineSets", func() (bool, string) {
		evs, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cluster,reason=BootImagesSkipped"})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range evs.Items {
			if strings.HasPrefix(e.Message, "MAPI MachineSets 2 skipped: owned (owned by ConfigMap owner") && strings.Contains(e.Message, "win (its machines run Windows") {
				return true, ""
			}
			msgs = append(msgs, e.Message)
		}
		return false, strings.Join(msgs, "; ")
	})
}

// TestCheckClusterNamesSkipped: the report behind `mcotui bootimages` names every
// skipped MachineSet and why.
func TestCheckClusterNamesSkipped(t *testing.T) {
	sets := []*machinev1beta1.MachineSet{
		loadMachineSet(t, "aws-machineset.yaml", "aws", nil),
		loadMachineSet(t, "aws-machineset.yaml", "win", func(ms *machinev1beta1.MachineSet) {
			ms.Spec.Template.Labels[bootimage.OSIDLabel] = bootimage.OSIDWindows
		}),
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: bootimage.ConfigMapNamespace, Name: bootimage.ConfigMapName},
		Data: map[string]string{bootimage.StreamKey: string(readBootData(t, "stream.json"))}}
	rep, err := bootimage.CheckCluster(bootimage.ClusterInputs{MachineSets: sets, ConfigMap: cm})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Platform != "AWS" || rep.Selection.Mode != operatorv1.All || !rep.Selection.Defaulted {
		t.Errorf("platform %s mode %s defaulted %t: want AWS's default, All", rep.Platform, rep.Selection.Mode, rep.Selection.Defaulted)
	}
	s := rep.Stats()
	if s.Total != 2 || s.Reconciled != 2 || len(s.Skipped) != 1 || s.Skipped[0].MachineSet != "win" {
		t.Errorf("stats = %+v", s)
	}
	if len(rep.Results) != 1 || rep.Results[0].Outcome != bootimage.Patch || rep.Results[0].Target != awsTarget {
		t.Errorf("results = %+v", rep.Results)
	}
}
