package controller_test

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// installCAPICRDs installs Cluster API's and its AWS and GCP providers' CRDs
// (testdata/capi-crds, from their Go modules) and waits until they are served.
func installCAPICRDs(t *testing.T) { t.Helper(); installCAPICRDsIn(t, env) }

// installCAPICRDsIn is installCAPICRDs on the control plane e.
func installCAPICRDsIn(t *testing.T, e *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	apply := e.KubectlCommand(ctx, "apply", "--server-side", "--force-conflicts", "-f", "../testdata/capi-crds")
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("install the Cluster API CRDs: %v\n%s", err, out)
	}
	wait := e.KubectlCommand(ctx, "wait", "--for", "condition=Established", "--timeout", "120s",
		"crd/machinedeployments.cluster.x-k8s.io", "crd/machinesets.cluster.x-k8s.io", "crd/clusters.cluster.x-k8s.io",
		"crd/awsclusters.infrastructure.cluster.x-k8s.io", "crd/awsmachinetemplates.infrastructure.cluster.x-k8s.io",
		"crd/gcpmachinetemplates.infrastructure.cluster.x-k8s.io")
	if out, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("the Cluster API CRDs are not established: %v\n%s", err, out)
	}
}

// createObj creates the object in the YAML doc in ns.
func createObj(t *testing.T, gvr schema.GroupVersionResource, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	return createObjIn(t, env, gvr, ns, doc)
}

// createObjIn is createObj on the control plane e.
func createObjIn(t *testing.T, e *kubetest.Env, gvr schema.GroupVersionResource, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	out, err := e.Dynamic.Resource(gvr).Namespace(ns).Create(kubetest.Context(t), &u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
	}
	return out
}

func machineDeployment(name, template, templateKind, extraMeta string) string {
	return fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: %[1]s
%[4]s
spec:
  clusterName: boot
  selector: {matchLabels: {md: %[1]s}}
  template:
    metadata: {labels: {md: %[1]s}}
    spec:
      clusterName: boot
      bootstrap: {dataSecretName: %[1]s-user-data}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: %[3]s, name: %[2]s}
`, name, template, templateKind, extraMeta)
}

func capiMachineSet(name, template, templateKind string) string {
	return strings.Replace(machineDeployment(name, template, templateKind, ""), "kind: MachineDeployment", "kind: MachineSet", 1)
}

func awsTemplate(name, ami, annotations string) string {
	return fmt.Sprintf(`apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: %s%s}
spec: {template: {spec: {instanceType: m6i.xlarge, ami: {id: %s}, iamInstanceProfile: nodes.cluster-api-provider-aws.sigs.k8s.io}}}
`, name, annotations, ami)
}

func gcpTemplate(name, image string) string {
	return fmt.Sprintf(`apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: GCPMachineTemplate
metadata: {name: %s}
spec: {template: {spec: {instanceType: n2-standard-4, image: %q}}}
`, name, image)
}

// capiState is every MachineDeployment's template and resourceVersion, and every
// template's image, in ns: what a sync may change.
func capiState(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := kubetest.Context(t)
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{bootimage.MachineDeploymentsResource, bootimage.AWSMachineTemplatesResource, bootimage.GCPMachineTemplatesResource} {
		l, err := env.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			v := o.GetResourceVersion()
			switch o.GetKind() {
			case "MachineDeployment":
				v += " -> " + bootimage.InfrastructureRef(&o).Name
			case "AWSMachineTemplate":
				v += " " + nested(&o, "spec", "template", "spec", "ami", "id")
			default:
				v += " " + nested(&o, "spec", "template", "spec", "image")
			}
			out[o.GetKind()+" "+o.GetName()] = v
		}
	}
	return out
}

func nested(o *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, path...)
	return s
}

// TestCAPIBootImages: Cluster API MachineDeployments against the real API server with
// Cluster API's, CAPA's and CAPG's CRDs. Partial selects by the MachineDeployment's
// labels; a selected MachineDeployment whose template boots an older image gets a new
// template (a copy with the target image: the AWS one of its AWSCluster's region, GCP's
// stream image) and points at it; the old template is left; one owned by a controller,
// one a Cluster's topology manages and one with a custom image are skipped saying why;
// None selects nothing; a second run changes nothing; a template mcotui made is deleted
// only once no MachineSet makes machines from it, a user's never.
func TestCAPIBootImages(t *testing.T) {
	ctx := kubetest.Context(t)
	ns := capiAWSMachineDeployment(t)
	stream, err := bootimage.ParseStream(readBootData(t, "stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	createObj(t, bootimage.GCPMachineTemplatesResource, ns, gcpTemplate("gcp-old", gcpOld))
	createObj(t, bootimage.GCPMachineTemplatesResource, ns, gcpTemplate("gcp-custom", "projects/my-project/global/images/golden-7"))
	createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("gcp-md", "gcp-old", "GCPMachineTemplate", ""))
	createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("custom-md", "gcp-custom", "GCPMachineTemplate", ""))
	createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("owned-md", "gcp-old", "GCPMachineTemplate",
		"  ownerReferences: [{apiVersion: example.com/v1, kind: NodeGroup, name: pool-a, uid: 5d6c5c7e-8f0a-4c55-9d43-0b0e7f8e2a11, controller: true}]"))
	createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("topo-md", "gcp-old", "GCPMachineTemplate",
		"  labels: {topology.cluster.x-k8s.io/owned: \"\"}"))
	// The MachineSet Cluster API made for aws-md's current revision.
	createObj(t, bootimage.CAPIMachineSetsResource, ns, capiMachineSet("aws-md-7f9c", "aws-old", "AWSMachineTemplate"))

	c := &kube.CAPIBootImages{Dynamic: env.Dynamic, FieldManager: "capi-test", Log: slog.New(slog.DiscardHandler)}
	opts := bootimage.Options{DefaultArch: "x86_64"}
	partial := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{
		Mode: operatorv1.Partial, Partial: &operatorv1.PartialSelector{MachineResourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"boot-images": "managed"}}},
	}}}
	all := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}
	none := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.None}}}
	sync := func(managers []operatorv1.MachineManager) kube.CAPIReport {
		t.Helper()
		rep, err := c.Sync(ctx, "", managers, stream, opts)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatalf("sync: %v %v", err, rep.Errors)
		}
		return rep
	}
	// Other tests' namespaces hold no MachineDeployments; only ns's are looked at.
	inNS := func(rep kube.CAPIReport) map[string]bootimage.MDResult {
		out := map[string]bootimage.MDResult{}
		for _, r := range rep.Results {
			if name, ok := strings.CutPrefix(r.MachineDeployment, ns+"/"); ok {
				out[name] = r
			}
		}
		return out
	}

	before := capiState(t, ns)
	rep := sync(none)
	if len(rep.Selection.Selected) != 0 || len(rep.Results) != 0 || !maps.Equal(before, capiState(t, ns)) {
		t.Fatalf("None: selected %d, results %+v; state %v -> %v", len(rep.Selection.Selected), rep.Results, before, capiState(t, ns))
	}

	rep = sync(partial)
	res := inNS(rep)
	if len(res) != 1 || res["aws-md"].Outcome != bootimage.Patch || res["aws-md"].Target != awsTarget || res["aws-md"].Current != awsOld {
		t.Fatalf("Partial: %+v, want aws-md alone moved from %s to %s", res, awsOld, awsTarget)
	}
	awsNew := res["aws-md"].NewTemplate.GetName()
	tmpl, err := env.Dynamic.Resource(bootimage.AWSMachineTemplatesResource).Namespace(ns).Get(ctx, awsNew, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nested(tmpl, "spec", "template", "spec", "ami", "id"); got != awsTarget || nested(tmpl, "spec", "template", "spec", "instanceType") != "m6i.xlarge" ||
		nested(tmpl, "spec", "template", "spec", "iamInstanceProfile") == "" || tmpl.GetAnnotations()[bootimage.TemplateOfAnnotation] != "aws-old" {
		t.Errorf("new template %s: %v", awsNew, tmpl.Object)
	}
	state := capiState(t, ns)
	if !strings.HasSuffix(state["MachineDeployment aws-md"], "-> "+awsNew) || !strings.HasSuffix(state["AWSMachineTemplate aws-old"], awsOld) ||
		!strings.HasSuffix(state["MachineDeployment gcp-md"], "-> gcp-old") {
		t.Errorf("after Partial: %v", state)
	}

	rep = sync(all)
	res = inNS(rep)
	if res["aws-md"].Outcome != bootimage.UpToDate || res["gcp-md"].Outcome != bootimage.Patch || res["gcp-md"].Target != gcpTarget ||
		res["custom-md"].Outcome != bootimage.Skipped || res["custom-md"].Skip.Reason != bootimage.SkipCustomImage {
		t.Errorf("All: %+v", res)
	}
	skipped := map[string]bootimage.Skip{}
	for _, sk := range rep.Skipped() {
		skipped[strings.TrimPrefix(sk.MachineSet, ns+"/")] = sk
	}
	if sk := skipped["owned-md"]; sk.Reason != bootimage.SkipOwnerReference || !strings.Contains(sk.Message, "NodeGroup pool-a") {
		t.Errorf("owned-md: %+v", sk)
	}
	if sk := skipped["topo-md"]; sk.Reason != bootimage.SkipClusterClass || !strings.Contains(sk.Message, "ClusterClass") {
		t.Errorf("topo-md: %+v", sk)
	}
	if sk := skipped["custom-md"]; !strings.Contains(sk.Message, "golden-7") {
		t.Errorf("custom-md: %+v", sk)
	}
	state = capiState(t, ns)
	gcpNew := res["gcp-md"].NewTemplate.GetName()
	if !strings.HasSuffix(state["GCPMachineTemplate "+gcpNew], gcpTarget) || !strings.HasSuffix(state["MachineDeployment gcp-md"], "-> "+gcpNew) ||
		!strings.HasSuffix(state["MachineDeployment owned-md"], "-> gcp-old") || !strings.HasSuffix(state["MachineDeployment topo-md"], "-> gcp-old") ||
		!strings.HasSuffix(state["MachineDeployment custom-md"], "-> gcp-custom") {
		t.Errorf("after All: %v", state)
	}

	// A second run changes nothing.
	before = capiState(t, ns)
	rep = sync(all)
	for name, r := range inNS(rep) {
		if r.Outcome == bootimage.Patch {
			t.Errorf("second run: %s patched again: %+v", name, r)
		}
	}
	if after := capiState(t, ns); !maps.Equal(before, after) {
		t.Errorf("second run changed objects:\n%v\n%v", before, after)
	}

	// A copy mcotui made earlier (its annotation) stays while a MachineSet makes
	// machines from it, and goes once none does; the user's template stays.
	createObj(t, bootimage.AWSMachineTemplatesResource, ns, awsTemplate("aws-old-0123456789", awsOld, ", annotations: {"+bootimage.TemplateOfAnnotation+": aws-old}"))
	createObj(t, bootimage.CAPIMachineSetsResource, ns, capiMachineSet("aws-md-0123", "aws-old-0123456789", "AWSMachineTemplate"))
	if rep = sync(all); slices.ContainsFunc(rep.Deleted, func(s string) bool { return strings.Contains(s, ns+"/") }) {
		t.Errorf("deleted %v while a MachineSet uses it", rep.Deleted)
	}
	if err := env.Dynamic.Resource(bootimage.CAPIMachineSetsResource).Namespace(ns).Delete(ctx, "aws-md-0123", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep = sync(all); !slices.Contains(rep.Deleted, "AWSMachineTemplate "+ns+"/aws-old-0123456789") {
		t.Errorf("deleted %v, want the unused copy", rep.Deleted)
	}
	state = capiState(t, ns)
	if _, ok := state["AWSMachineTemplate aws-old-0123456789"]; ok {
		t.Errorf("the unused copy is still there: %v", state)
	}
	for _, keep := range []string{"AWSMachineTemplate aws-old", "AWSMachineTemplate " + awsNew, "GCPMachineTemplate gcp-old", "GCPMachineTemplate " + gcpNew} {
		if _, ok := state[keep]; !ok {
			t.Errorf("%s was deleted: %v", keep, state)
		}
	}
}

// capiAWSMachineDeployment creates, in a new namespace it returns, an AWS Cluster in
// us-east-1 and a MachineDeployment aws-md of amd64 machines whose AWSMachineTemplate
// aws-old boots the old AMI.
func capiAWSMachineDeployment(t *testing.T) string {
	t.Helper()
	installCAPICRDs(t)
	ns, err := env.CreateNamespace(kubetest.Context(t), "capi-")
	if err != nil {
		t.Fatal(err)
	}
	createObj(t, bootimage.ClustersResource, ns, `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: boot}
spec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: boot}}
`)
	createObj(t, bootimage.AWSClustersResource, ns, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSCluster\nmetadata: {name: boot}\nspec: {region: us-east-1}\n")
	createObj(t, bootimage.AWSMachineTemplatesResource, ns, awsTemplate("aws-old", awsOld, ""))
	// Its architecture named as the autoscaler's annotation names it: the test
	// cluster's nodes give no default.
	createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("aws-md", "aws-old", "AWSMachineTemplate",
		"  labels: {boot-images: managed}\n  annotations: {"+bootimage.ArchAnnotation+": kubernetes.io/arch=amd64}"))
	return ns
}
