package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// bootImageObjects creates the coreos-bootimages ConfigMap and three MachineSets from
// core/bootimage's testdata: aws (labelled update-boot-image=true), gcp and win (a
// Windows copy of aws), and removes them and MachineConfiguration/cluster at the end.
func bootImageObjects(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	for _, ns := range []string{bootimage.MachineAPINamespace, bootimage.ConfigMapNamespace} {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	stream, err := os.ReadFile("core/bootimage/testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	cms := env.Kube.CoreV1().ConfigMaps(bootimage.ConfigMapNamespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootimage.ConfigMapName},
		Data: map[string]string{bootimage.StreamKey: string(stream), "releaseVersion": "4.18.1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mcs := env.Operator.OperatorV1().MachineConfigurations()
	t.Cleanup(func() {
		_ = cms.Delete(context.Background(), bootimage.ConfigMapName, metav1.DeleteOptions{})
		_ = mcs.Delete(context.Background(), bootimage.MachineConfigurationName, metav1.DeleteOptions{})
	})
	load := func(file, name string, edit func(*machinev1beta1.MachineSet)) *machinev1beta1.MachineSet {
		b, err := os.ReadFile("core/bootimage/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var ms machinev1beta1.MachineSet
		if err := yaml.UnmarshalStrict(b, &ms); err != nil {
			t.Fatal(err)
		}
		ms.Name = name
		if edit != nil {
			edit(&ms)
		}
		return &ms
	}
	sets := env.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace)
	for _, ms := range []*machinev1beta1.MachineSet{
		load("aws-machineset.yaml", "aws", nil),
		load("gcp-machineset.yaml", "gcp", func(ms *machinev1beta1.MachineSet) {
			ms.Annotations = map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}
		}),
		load("aws-machineset.yaml", "win", func(ms *machinev1beta1.MachineSet) {
			delete(ms.Labels, "update-boot-image")
			ms.Spec.Template.Labels[bootimage.OSIDLabel] = bootimage.OSIDWindows
		}),
	} {
		if _, err := sets.Create(ctx, ms, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sets.Delete(context.Background(), ms.Name, metav1.DeleteOptions{}) })
	}
}

func TestBootImagesCommands(t *testing.T) {
	env := cluster.Env(t)
	bootImageObjects(t, env)
	ctx := kubetest.Context(t)
	mcs := env.Operator.OperatorV1().MachineConfigurations()

	// No MachineConfiguration: the default of mixed AWS and GCP MachineSets (no one
	// platform) is None.
	code, out, errOut := runMcotui(t, env, "bootimages")
	if code != 0 {
		t.Fatalf("bootimages: exit %d: %s", code, errOut)
	}
	want := `Mode: None, the default on platform None: MachineConfiguration/cluster sets no mode
Target: stream rhcos-4.18, release 4.18.1 (configmap openshift-machine-config-operator/coreos-bootimages)

NAME   PLATFORM   SELECTED   STATUS   CURRENT   TARGET
aws    AWS        no         -        -         -
gcp    GCP        no         -        -         -
win    AWS        no         -        -         -

Skew: mode Manual, boot images OCP 0.0.0, limit 4.13.0: LIMIT EXCEEDED: the cluster is using OCP boot image version 0.0.0, which is below the minimum required version 4.13.0 (0.0.0: the install version is unknown and no boot image update has been recorded), as spec.bootImageSkewEnforcement.manual, or the install version when the spec names no mode says; update the boot images and record the oldest one's version in spec.bootImageSkewEnforcement.manual, or set its mode None
`
	if out != want {
		t.Errorf("bootimages:\n%s\nwant:\n%s", out, want)
	}

	// A dry run lists what Partial would select, and changes nothing.
	code, out, errOut = runMcotui(t, env, "bootimages", "set-mode", "Partial", "--selector", "update-boot-image=true", "--dry-run")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errOut)
	}
	want = `Dry run: mode Partial (update-boot-image=true) would select 1 of 3 MachineSets.
Selected (1):
  aws: NeedsUpdate from ami-0fe05b1aa8dacfa90 to ami-0e5d1a7b2c8f3e496
Skipped (0):
Not selected (2):
  gcp
  win
`
	if out != want {
		t.Errorf("dry run:\n%s\nwant:\n%s", out, want)
	}
	if _, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created MachineConfiguration/cluster: %v", err)
	}

	// set-mode creates MachineConfiguration/cluster, then changes its mode.
	code, out, errOut = runMcotui(t, env, "bootimages", "set-mode", "partial", "--selector", "update-boot-image=true")
	if code != 0 || out != "machineconfiguration.operator.openshift.io/cluster boot image mode of Machine API MachineSets set to Partial (update-boot-image=true)\n" {
		t.Fatalf("set-mode Partial: exit %d: %s%s", code, out, errOut)
	}
	cfg, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Spec.ManagedBootImages.MachineManagers; len(m) != 1 || m[0].Selection.Mode != operatorv1.Partial ||
		m[0].Selection.Partial.MachineResourceSelector.MatchLabels["update-boot-image"] != "true" {
		t.Errorf("machineManagers = %+v", m)
	}
	if code, _, errOut := runMcotui(t, env, "bootimages", "set-mode", "All"); code != 0 {
		t.Fatalf("set-mode All: exit %d: %s", code, errOut)
	}

	code, out, errOut = runMcotui(t, env, "bootimages", "-o", "wide")
	if code != 0 {
		t.Fatalf("bootimages -o wide: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Mode: All\n",
		"aws    AWS        yes        NeedsUpdate   ami-0fe05b1aa8dacfa90",
		"gcp    GCP        yes        NeedsUpdate   projects/rhcos-cloud/global/images/rhcos-412-85-202203181601-0-gcp-x86-64   projects/rhcos-cloud/global/images/rhcos-418-94-202502100215-0-gcp-x86-64",
		"win    AWS        skipped    Skipped",
		"1 skipped: win (its machines run Windows",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bootimages -o wide lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runMcotui(t, env, "bootimages", "-o", "json")
	var v bootImagesView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Mode != "All" || len(v.MachineSets) != 3 {
		t.Errorf("bootimages -o json: exit %d, %v: %+v", code, err, v)
	}

	// A Manual record within the limit, in the spec the test control plane's schema
	// accepts, is reported as such.
	cfg, err = mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeManual,
		Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "9.6.20251023-0"}}
	if _, err := mcs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMcotui(t, env, "bootimages")
	if want := "\nSkew: mode Manual, boot images RHCOS 9.6.20251023-0, limit 9.2: within the limit\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("bootimages with a Manual RHCOS version: exit %d %s, want %q in:\n%s", code, errOut, want, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bootimages", "set-mode", "Partial"}, "mode Partial needs --selector"},
		{[]string{"bootimages", "set-mode", "All", "--selector", "a=b"}, "--selector is only for mode Partial"},
		{[]string{"bootimages", "set-mode", "Some"}, `mode "Some": use All, None or Partial`},
		{[]string{"bootimages", "set-mode", "Partial", "--selector", "a in"}, `--selector "a in"`},
	} {
		if code, _, errOut := mcotui.Cmd(t, tc.args...); code != cmdutil.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
		}
	}
}

// installCAPICRDs installs Cluster API's and its AWS and GCP providers' CRDs
// (testdata/capi-crds, from their Go modules) and waits until they are served.
func installCAPICRDs(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	apply := env.KubectlCommand(ctx, "apply", "--server-side", "--force-conflicts", "-f", "testdata/capi-crds")
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("install the Cluster API CRDs: %v\n%s", err, out)
	}
	wait := env.KubectlCommand(ctx, "wait", "--for", "condition=Established", "--timeout", "120s",
		"crd/machinedeployments.cluster.x-k8s.io", "crd/machinesets.cluster.x-k8s.io", "crd/clusters.cluster.x-k8s.io",
		"crd/awsclusters.infrastructure.cluster.x-k8s.io", "crd/awsmachinetemplates.infrastructure.cluster.x-k8s.io", "crd/gcpmachinetemplates.infrastructure.cluster.x-k8s.io")
	if out, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("the Cluster API CRDs are not established: %v\n%s", err, out)
	}
}

// capiAWSCluster is a Cluster boot in us-east-1 (its AWSCluster) and an
// AWSMachineTemplate workers on an old AMI, in namespace NS (replaced by the caller).
const capiAWSCluster = `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: boot, namespace: NS}
spec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: boot}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSCluster
metadata: {name: boot, namespace: NS}
spec: {region: us-east-1}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: workers, namespace: NS}
spec: {template: {spec: {instanceType: m6i.large, ami: {id: ami-0fe05b1aa8dacfa90}}}}
`

// TestBootImagesMachineDeployments: `bootimages` lists Cluster API MachineDeployments
// (Cluster API's and CAPA's CRDs from testdata/capi-crds) beside the MachineSets, with
// what the controller would do to each, and changes nothing.
func TestBootImagesMachineDeployments(t *testing.T) {
	env := cluster.Env(t)
	bootImageObjects(t, env)
	ctx := kubetest.Context(t)
	installCAPICRDs(t, env)
	ns, err := env.CreateNamespace(ctx, "capi-")
	if err != nil {
		t.Fatal(err)
	}
	// Removed at the end: the other tests' output has no MachineDeployments section.
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	objs := capiAWSCluster
	objs += `---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: GCPMachineTemplate
metadata: {name: golden, namespace: NS}
spec: {template: {spec: {instanceType: n2-standard-4, image: projects/acme/global/images/golden-7}}}
`
	const amd64 = `"capacity.cluster-autoscaler.kubernetes.io/labels": "kubernetes.io/arch=amd64"`
	// OpenShift-length names, as the TUI's goldens use.
	for _, md := range []struct{ name, kind, template, meta string }{
		{"workers", "AWSMachineTemplate", "workers", `annotations: {` + amd64 + `}`},
		{"pool", "AWSMachineTemplate", "workers", `ownerReferences: [{apiVersion: example.com/v1, kind: NodeGroup, name: pool, uid: 5d6c5c7e-8f0a-4c55-9d43-0b0e7f8e2a11, controller: true}]`},
		{"topo", "AWSMachineTemplate", "workers", `labels: {topology.cluster.x-k8s.io/owned: ""}`},
		{"golden", "GCPMachineTemplate", "golden", `annotations: {` + amd64 + `}`},
		{"azure", "AzureMachineTemplate", "az-workers", `annotations: {` + amd64 + `}`},
	} {
		objs += `---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: ` + md.name + `, namespace: NS, ` + md.meta + `}
spec:
  clusterName: boot
  selector: {matchLabels: {md: x}}
  template:
    metadata: {labels: {md: x}}
    spec: {clusterName: boot, bootstrap: {dataSecretName: x}, infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: ` + md.kind + `, name: ` + md.template + `}}
`
	}
	create := env.KubectlCommand(ctx, "create", "-f", "-")
	create.Stdin = strings.NewReader(strings.ReplaceAll(objs, "NS", ns))
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("create the Cluster API objects: %v\n%s", err, out)
	}
	if code, _, errOut := runMcotui(t, env, "bootimages", "set-mode", "All"); code != 0 {
		t.Fatalf("set-mode All: exit %d: %s", code, errOut)
	}
	const oldAMI, newAMI = "ami-0fe05b1aa8dacfa90", "ami-0e5d1a7b2c8f3e496"
	// The table: every MachineDeployment with its selection, status, skip reason and
	// images.
	for _, output := range []string{"", "wide"} {
		args := []string{"bootimages"}
		if output != "" {
			args = append(args, "-o", output)
		}
		code, out, errOut := runMcotui(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		_, section, _ := strings.Cut(out, "Cluster API MachineDeployments: ")
		rows := map[string]string{}
		for _, line := range strings.Split(section, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				rows[f[0]] = strings.Join(f, " ")
			}
		}
		header := "mode All (the Machine API MachineSets' mode)\nMACHINEDEPLOYMENT"
		if !strings.HasPrefix(section, header) || !strings.Contains(out, "NAME ") {
			t.Errorf("%v: no MachineDeployments section after the MachineSets:\n%s", args, out)
		}
		for name, want := range map[string]string{
			"workers": "AWSMachineTemplate/workers yes NeedsUpdate - " + oldAMI + " " + newAMI,
			"pool":    "AWSMachineTemplate/workers skipped Skipped OwnerReference - -",
			"topo":    "AWSMachineTemplate/workers skipped Skipped ClusterClassManaged - -",
			"golden":  "GCPMachineTemplate/golden yes Skipped CustomImage projects/acme/global/images/golden-7 ",
			"azure":   "AzureMachineTemplate/az-workers yes Skipped UnsupportedPlatform - -",
		} {
			if r := rows[ns+"/"+name]; !strings.HasPrefix(r, ns+"/"+name+" "+want) {
				t.Errorf("%v: %s: %q, want it to start %q\n%s", args, name, r, want, out)
			}
		}
		if output == "wide" {
			if r := rows[ns+"/workers"]; !strings.Contains(r, " x86_64 a copy of AWSMachineTemplate/workers with the target image, workers-") {
				t.Errorf("-o wide: workers: %q", r)
			}
			if r := rows[ns+"/azure"]; !strings.Contains(r, `"AzureMachineTemplate"`) {
				t.Errorf("-o wide: azure names no template kind: %q", r)
			}
		} else if !strings.Contains(out, "MachineDeployments 4 skipped: "+ns+"/azure (its infrastructure template is a \"AzureMachineTemplate\"") ||
			!strings.Contains(out, ns+"/pool (owned by NodeGroup pool, which manages it") {
			t.Errorf("bootimages: the skip reasons are not named:\n%s", out)
		}
	}
	// JSON and YAML: the same rows, beside the MachineSets.
	for _, output := range []string{"json", "yaml"} {
		code, out, errOut := runMcotui(t, env, "bootimages", "-o", output)
		if code != 0 {
			t.Fatalf("-o %s: exit %d: %s", output, code, errOut)
		}
		var v struct {
			Mode               string
			MachineSets        []map[string]any `json:"machineSets"`
			MachineDeployments []map[string]any `json:"machineDeployments"`
		}
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("-o %s: %v\n%s", output, err, out)
		}
		if len(v.MachineSets) != 3 || v.Mode != "All" {
			t.Errorf("-o %s: mode %q, %d MachineSets, want All and 3", output, v.Mode, len(v.MachineSets))
		}
		got := map[string]map[string]any{}
		for _, r := range v.MachineDeployments {
			if r["namespace"] == ns {
				got[r["name"].(string)] = r
			}
		}
		workers := got["workers"]
		if len(got) != 5 || workers["template"] != "AWSMachineTemplate/workers" || workers["selected"] != "yes" || workers["status"] != "NeedsUpdate" ||
			workers["current"] != oldAMI || workers["target"] != newAMI || workers["arch"] != "x86_64" || !strings.HasPrefix(fmt.Sprint(workers["newTemplate"]), "workers-") {
			t.Errorf("-o %s: %d MachineDeployments, workers %v\n%s", output, len(got), workers, out)
		}
		for name, reason := range map[string]string{"pool": "OwnerReference", "topo": "ClusterClassManaged", "golden": "CustomImage", "azure": "UnsupportedPlatform"} {
			if r := got[name]; r["status"] != "Skipped" || r["reason"] != reason || r["message"] == "" {
				t.Errorf("-o %s: %s: %v, want Skipped for %s with a message", output, name, r, reason)
			}
		}
		if r := got["pool"]; r["selected"] != "skipped" {
			t.Errorf("-o %s: pool selected %v, want skipped", output, r["selected"])
		}
	}
	// set-mode --dry-run says what a mode would select among them too.
	code, out, errOut := runMcotui(t, env, "bootimages", "set-mode", "Partial", "--selector", "update-boot-image=true", "--dry-run")
	if code != 0 {
		t.Fatalf("set-mode --dry-run: exit %d: %s", code, errOut)
	}
	_, dry, _ := strings.Cut(out, "Cluster API MachineDeployments: mode Partial (update-boot-image=true) would select 0 of ")
	if _, notSelected, _ := strings.Cut(dry, "Not selected ("); !strings.Contains(notSelected, ns+"/workers\n") || !strings.Contains(notSelected, ns+"/pool\n") {
		t.Errorf("set-mode --dry-run: the MachineDeployments are not listed by what Partial would do:\n%s", out)
	}
	// Partial: a MachineDeployment the selector does not match is listed, not selected.
	if code, _, errOut := runMcotui(t, env, "bootimages", "set-mode", "Partial", "--selector", "update-boot-image=true"); code != 0 {
		t.Fatalf("set-mode Partial: exit %d: %s", code, errOut)
	}
	code, out, errOut = runMcotui(t, env, "bootimages", "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, errOut)
	}
	var partial bootImagesView
	if err := json.Unmarshal([]byte(out), &partial); err != nil {
		t.Fatal(err)
	}
	for _, r := range partial.MachineDeployments {
		if r.Namespace == ns && r.Name == "workers" && (r.Selected != "no" || r.Status != "" || r.Template != "AWSMachineTemplate/workers") {
			t.Errorf("Partial: workers %+v, want not selected", r)
		}
	}
	md, err := env.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(ns).Get(ctx, "workers", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := bootimage.InfrastructureRef(md); ref.Name != "workers" {
		t.Errorf("bootimages changed the MachineDeployment's template to %s", ref.Name)
	}
}
