package bootimage_test

import (
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/bootimage"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return u
}

func md(t *testing.T, name, kind, template, meta string) *unstructured.Unstructured {
	return obj(t, `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: `+name+`, namespace: ns`+meta+`}
spec: {clusterName: c, template: {spec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: `+kind+`, name: `+template+`}}}}
`)
}

func awsTmpl(t *testing.T, name, amiField string) *unstructured.Unstructured {
	return obj(t, `apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: `+name+`, namespace: ns, resourceVersion: "7", uid: abc, labels: {team: a}}
spec: {template: {spec: {instanceType: m6i.large, `+amiField+`}}}
`)
}

func TestReconcileMachineDeployment(t *testing.T) {
	stream := loadStream(t)
	opts := bootimage.Options{DefaultArch: "x86_64"}
	aws := md(t, "a", "AWSMachineTemplate", "old", "")
	cases := []struct {
		name         string
		md, tmpl     *unstructured.Unstructured
		region       string
		opts         bootimage.Options
		outcome      bootimage.Outcome
		reason       bootimage.SkipReason
		wantInTarget string
	}{
		{name: "aws older", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"), region: "us-east-1", opts: opts, outcome: bootimage.Patch},
		{name: "aws arm by annotation", md: md(t, "a", "AWSMachineTemplate", "old", `, annotations: {"capacity.cluster-autoscaler.kubernetes.io/labels": "kubernetes.io/arch=arm64"}`),
			tmpl: awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"), region: "us-east-1", opts: opts, outcome: bootimage.Patch, wantInTarget: awsARMUSEast},
		{name: "aws current", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: "+awsUSEast1+"}"), region: "us-east-1", opts: opts, outcome: bootimage.UpToDate},
		{name: "aws custom", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: ami-custom}"), region: "us-east-1",
			opts: bootimage.Options{DefaultArch: "x86_64", IsRHCOSAMI: func(string) bool { return false }}, outcome: bootimage.Skipped, reason: bootimage.SkipCustomImage},
		{name: "aws lookup", md: aws, tmpl: awsTmpl(t, "old", "imageLookupOrg: \"123\""), region: "us-east-1", opts: opts, outcome: bootimage.Skipped, reason: bootimage.SkipNoAMIID},
		{name: "aws no region", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"), opts: opts, outcome: bootimage.Skipped, reason: bootimage.SkipNoRegionImage},
		{name: "aws region not in stream", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"), region: "mars-north-1", opts: opts, outcome: bootimage.Skipped, reason: bootimage.SkipNoRegionImage},
		{name: "no arch", md: aws, tmpl: awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"), region: "us-east-1", outcome: bootimage.Skipped, reason: bootimage.SkipNoArchitecture},
		{name: "azure", md: md(t, "z", "AzureMachineTemplate", "z", ""), opts: opts, outcome: bootimage.Skipped, reason: bootimage.SkipUnsupportedPlatform},
		{name: "gcp family", md: md(t, "g", "GCPMachineTemplate", "g", ""), tmpl: obj(t, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: GCPMachineTemplate\nmetadata: {name: g, namespace: ns}\nspec: {template: {spec: {imageFamily: projects/x/global/images/family/y}}}\n"),
			opts: opts, outcome: bootimage.Skipped, reason: bootimage.SkipCustomImage},
		{name: "gcp by URL", md: md(t, "g", "GCPMachineTemplate", "g", ""), tmpl: obj(t, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: GCPMachineTemplate\nmetadata: {name: g, namespace: ns}\nspec: {template: {spec: {image: https://www.googleapis.com/compute/v1/"+gcpOldImage+"}}}\n"),
			opts: opts, outcome: bootimage.Patch, wantInTarget: gcpX86},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := bootimage.ReconcileMachineDeployment(c.md, c.tmpl, c.region, stream, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != c.outcome || r.Skip.Reason != c.reason {
				t.Fatalf("%s %q (%s), want %s %q", r.Outcome, r.Skip.Reason, r.Skip.Message, c.outcome, c.reason)
			}
			if c.outcome == bootimage.Skipped && (r.Skip.MachineSet != "ns/"+c.md.GetName() || r.Skip.Message == "") {
				t.Errorf("skip %+v names no MachineDeployment or reason", r.Skip)
			}
			if c.outcome != bootimage.Patch {
				if r.NewTemplate != nil || r.Patch != nil {
					t.Errorf("a %s with a new template or patch: %+v", r.Outcome, r)
				}
				return
			}
			if c.wantInTarget != "" && r.Target != c.wantInTarget {
				t.Errorf("target %s, want %s", r.Target, c.wantInTarget)
			}
			nt := r.NewTemplate
			if nt.GetResourceVersion() != "" || nt.GetUID() != "" || nt.GetNamespace() != "ns" || !strings.HasPrefix(nt.GetName(), c.tmpl.GetName()+"-") ||
				nt.GetAnnotations()[bootimage.TemplateOfAnnotation] != c.tmpl.GetName() {
				t.Errorf("new template metadata %+v", nt.Object["metadata"])
			}
			if got := string(r.Patch); got != `{"spec":{"template":{"spec":{"infrastructureRef":{"name":"`+nt.GetName()+`"}}}}}` {
				t.Errorf("patch %s", got)
			}
			// The same target names the same copy; a copy's copy is named after the
			// original.
			again, _ := bootimage.ReconcileMachineDeployment(c.md, c.tmpl, c.region, stream, c.opts)
			if again.NewTemplate.GetName() != nt.GetName() {
				t.Errorf("names %s then %s", nt.GetName(), again.NewTemplate.GetName())
			}
		})
	}
}

func TestReconcileMachineDeploymentCopyOfCopy(t *testing.T) {
	stream := loadStream(t)
	tmpl := awsTmpl(t, "old-0123456789", "ami: {id: "+awsOldAMI+"}")
	tmpl.SetAnnotations(map[string]string{bootimage.TemplateOfAnnotation: "old"})
	r, err := bootimage.ReconcileMachineDeployment(md(t, "a", "AWSMachineTemplate", "old-0123456789", ""), tmpl, "us-east-1", stream, bootimage.Options{DefaultArch: "x86_64"})
	if err != nil || r.Outcome != bootimage.Patch {
		t.Fatalf("%+v %v", r, err)
	}
	if n := r.NewTemplate.GetName(); !strings.HasPrefix(n, "old-") || strings.HasPrefix(n, "old-0123456789-") || r.NewTemplate.GetAnnotations()[bootimage.TemplateOfAnnotation] != "old" {
		t.Errorf("copy of a copy: %s %v", n, r.NewTemplate.GetAnnotations())
	}
}

func TestReconcileMachineDeploymentWrongTemplate(t *testing.T) {
	_, err := bootimage.ReconcileMachineDeployment(md(t, "a", "AWSMachineTemplate", "old", ""), awsTmpl(t, "other", "ami: {id: x}"), "us-east-1", loadStream(t), bootimage.Options{DefaultArch: "x86_64"})
	if err == nil || !strings.Contains(err.Error(), "machinedeployment ns/a") {
		t.Fatalf("err %v, want one naming the MachineDeployment", err)
	}
}

func TestSelectMachineDeployments(t *testing.T) {
	mds := []*unstructured.Unstructured{
		md(t, "b", "AWSMachineTemplate", "t", ", labels: {pick: me}"),
		md(t, "a", "AWSMachineTemplate", "t", ""),
		md(t, "owned", "AWSMachineTemplate", "t", ", labels: {pick: me}, ownerReferences: [{apiVersion: x/v1, kind: Pool, name: p, uid: u, controller: true}]"),
		md(t, "cluster-owned", "AWSMachineTemplate", "t", ", ownerReferences: [{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: c, uid: u}]"),
		md(t, "topo", "AWSMachineTemplate", "t", ", labels: {topology.cluster.x-k8s.io/owned: \"\", pick: me}"),
	}
	joined := func(us []*unstructured.Unstructured) string { return strings.Join(names(us), ",") }
	partial := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{
		Mode: operatorv1.Partial, Partial: &operatorv1.PartialSelector{MachineResourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pick": "me"}}},
	}}}
	sel, err := bootimage.SelectMachineDeployments(configv1.NonePlatformType, partial, mds)
	if err != nil {
		t.Fatal(err)
	}
	if got := joined(sel.Selected); got != "b" || len(sel.Skipped) != 2 || strings.Join(sel.NotSelected, ",") != "ns/a,ns/cluster-owned" {
		t.Errorf("Partial: selected %s, skipped %v, not selected %v", got, sel.Skipped, sel.NotSelected)
	}
	sel, err = bootimage.SelectMachineDeployments(configv1.AWSPlatformType, nil, mds)
	if err != nil || !sel.Defaulted || sel.Mode != operatorv1.All || joined(sel.Selected) != "a,b,cluster-owned" {
		t.Errorf("AWS default: %+v %v", sel, err)
	}
	sel, err = bootimage.SelectMachineDeployments(configv1.NonePlatformType, nil, mds)
	if err != nil || sel.Mode != operatorv1.None || len(sel.Selected)+len(sel.Skipped) != 0 {
		t.Errorf("None default: %+v %v", sel, err)
	}
}

func TestStaleTemplates(t *testing.T) {
	ours := func(name string) *unstructured.Unstructured {
		u := awsTmpl(t, name, "ami: {id: x}")
		u.SetAnnotations(map[string]string{bootimage.TemplateOfAnnotation: "old"})
		return u
	}
	templates := []*unstructured.Unstructured{awsTmpl(t, "old", "ami: {id: x}"), ours("old-1"), ours("old-2"), ours("old-3")}
	mds := []*unstructured.Unstructured{md(t, "a", "AWSMachineTemplate", "old-3", "")}
	ms := []*unstructured.Unstructured{md(t, "a-1", "AWSMachineTemplate", "old-2", "")}
	ms[0].SetKind("MachineSet")
	got := bootimage.StaleTemplates(templates, mds, ms)
	if len(got) != 1 || got[0].GetName() != "old-1" {
		t.Errorf("stale %v, want old-1 alone (old is the user's, old-2 a MachineSet's, old-3 the MachineDeployment's)", names(got))
	}
}

func names(us []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.GetName())
	}
	return out
}

// TestDecideMachineDeployment: the decision reads the template and the region through
// the getter, and a missing object is an error naming the MachineDeployment and it.
func TestDecideMachineDeployment(t *testing.T) {
	stream := loadStream(t)
	objs := map[string]*unstructured.Unstructured{
		"awsmachinetemplates/old": awsTmpl(t, "old", "ami: {id: "+awsOldAMI+"}"),
		"clusters/c":              obj(t, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: c, namespace: ns}\nspec: {infrastructureRef: {kind: AWSCluster, name: c-infra}}\n"),
		"awsclusters/c-infra":     obj(t, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSCluster\nmetadata: {name: c-infra, namespace: ns}\nspec: {region: us-east-1}\n"),
	}
	var asked []string
	get := func(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		asked = append(asked, gvr.Resource+"/"+name)
		if o, ok := objs[gvr.Resource+"/"+name]; ok && ns == "ns" {
			return o, nil
		}
		return nil, fmt.Errorf("%s %s/%s not found", gvr.Resource, ns, name)
	}
	opts := bootimage.Options{DefaultArch: "x86_64"}
	r, err := bootimage.DecideMachineDeployment(md(t, "a", "AWSMachineTemplate", "old", ""), get, stream, opts)
	if err != nil || r.Outcome != bootimage.Patch || r.Target != awsUSEast1 || r.Current != awsOldAMI {
		t.Fatalf("%s %s -> %s, %v; want Patch %s -> %s", r.Outcome, r.Current, r.Target, err, awsOldAMI, awsUSEast1)
	}
	if got := strings.Join(asked, ","); got != "awsmachinetemplates/old,clusters/c,awsclusters/c-infra" {
		t.Errorf("read %s", got)
	}
	// An Azure template is not read: its kind decides.
	asked = nil
	if r, err := bootimage.DecideMachineDeployment(md(t, "z", "AzureMachineTemplate", "z", ""), get, stream, opts); err != nil || r.Skip.Reason != bootimage.SkipUnsupportedPlatform || !strings.Contains(r.Skip.Message, "AzureMachineTemplate") || asked != nil {
		t.Errorf("azure: %+v %v, read %v", r, err, asked)
	}
	delete(objs, "awsclusters/c-infra")
	if _, err := bootimage.DecideMachineDeployment(md(t, "a", "AWSMachineTemplate", "old", ""), get, stream, opts); err == nil || !strings.Contains(err.Error(), "machinedeployment ns/a: get AWSCluster c-infra of Cluster c") {
		t.Errorf("missing AWSCluster: %v", err)
	}
	if _, err := bootimage.DecideMachineDeployment(md(t, "a", "AWSMachineTemplate", "gone", ""), get, stream, opts); err == nil || !strings.Contains(err.Error(), "machinedeployment ns/a: get its AWSMachineTemplate gone") {
		t.Errorf("missing template: %v", err)
	}
}
