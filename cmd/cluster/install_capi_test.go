package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestInstallCAPIBootImagesLeastPrivilege: the controller's ServiceAccount, as
// `install --boot-images` binds it, may do to Cluster API's objects exactly what
// CAPIBootImages and the boot image loop's informers do, which is enough for a sync
// that moves a MachineDeployment and deletes an unused copy; everything else there is
// refused.
func TestInstallCAPIBootImagesLeastPrivilege(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	applyInstall(t)
	installCAPICRDs(t, env)
	token, err := env.ServiceAccountToken(ctx, installedNamespace, "mcotui-controller")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteTokenKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, "capi-rbac-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	// Its whole rule set over Cluster API's groups (and any wildcard group), in the
	// test's namespace and another.
	groups := []string{bootimage.CAPIGroup, bootimage.InfraGroup, "*"}
	want := map[string]string{
		"cluster.x-k8s.io/machinedeployments":                 "list,patch,watch",
		"cluster.x-k8s.io/machinesets":                        "list",
		"cluster.x-k8s.io/clusters":                           "get",
		"infrastructure.cluster.x-k8s.io/awsclusters":         "get",
		"infrastructure.cluster.x-k8s.io/awsmachinetemplates": "create,delete,get,list,watch",
		"infrastructure.cluster.x-k8s.io/gcpmachinetemplates": "create,delete,get,list,watch",
	}
	for _, n := range []string{ns, "default"} {
		review, err := sa.Kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: n},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Incomplete {
			t.Fatalf("namespace %s: the rules review is incomplete: %s", n, review.Status.EvaluationError)
		}
		got := map[string]string{}
		for _, r := range review.Status.ResourceRules {
			for _, g := range r.APIGroups {
				if !slices.Contains(groups, g) {
					continue
				}
				for _, res := range r.Resources {
					key := g + "/" + res
					if len(r.ResourceNames) > 0 {
						key += fmt.Sprint(r.ResourceNames)
					}
					verbs := append(strings.Split(got[key], ","), r.Verbs...)
					verbs = slices.DeleteFunc(verbs, func(v string) bool { return v == "" })
					slices.Sort(verbs)
					got[key] = strings.Join(slices.Compact(verbs), ",")
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("namespace %s: the controller may %v over Cluster API's groups, want only %v", n, got, want)
		}
	}

	// Enough for a sync: the MachineDeployment moves to a copy of its template with the
	// target AMI, and an unused copy mcotui made earlier is deleted.
	objs := capiAWSCluster + `---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: workers-0123456789, namespace: NS, annotations: {` + bootimage.TemplateOfAnnotation + `: workers}}
spec: {template: {spec: {instanceType: m6i.large, ami: {id: ami-0fe05b1aa8dacfa90}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: workers, namespace: NS, annotations: {"capacity.cluster-autoscaler.kubernetes.io/labels": "kubernetes.io/arch=amd64"}}
spec:
  clusterName: boot
  selector: {matchLabels: {md: x}}
  template:
    metadata: {labels: {md: x}}
    spec: {clusterName: boot, bootstrap: {dataSecretName: x}, infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: workers}}
`
	create := env.KubectlCommand(ctx, "create", "-f", "-")
	create.Stdin = strings.NewReader(strings.ReplaceAll(objs, "NS", ns))
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("create the Cluster API objects: %v\n%s", err, out)
	}
	raw, err := os.ReadFile("core/bootimage/testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := bootimage.ParseStream(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := &kube.CAPIBootImages{Dynamic: sa.Dynamic, FieldManager: "mcotui-controller", Log: slog.New(slog.DiscardHandler)}
	all := []operatorv1.MachineManager{{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}
	rep, err := c.Sync(ctx, "", all, stream, bootimage.Options{DefaultArch: "x86_64"})
	if err != nil {
		t.Fatalf("sync as the controller's ServiceAccount: %v", err)
	}
	// Other tests' MachineDeployments (in namespaces being deleted) may fail; ns's not.
	for _, err := range rep.Errors {
		if strings.Contains(err.Error(), ns+"/") {
			t.Errorf("sync as the controller's ServiceAccount: %v", err)
		}
	}
	md, err := env.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(ns).Get(ctx, "workers", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := bootimage.InfrastructureRef(md); ref.Name == "workers" || !strings.HasPrefix(ref.Name, "workers-") {
		t.Errorf("as the controller's ServiceAccount: the MachineDeployment names %s, want a new copy of workers", ref.Name)
	}
	if !slices.Contains(rep.Deleted, "AWSMachineTemplate "+ns+"/workers-0123456789") {
		t.Errorf("as the controller's ServiceAccount: deleted %v, want the unused copy", rep.Deleted)
	}

	// The rest is refused: a MachineDeployment's update, deletion and creation, a
	// template's update, a Cluster's listing.
	mds := sa.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(ns)
	tmpls := sa.Dynamic.Resource(bootimage.AWSMachineTemplatesResource).Namespace(ns)
	tmpl, err := tmpls.Get(ctx, "workers", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"update a MachineDeployment": func() error { _, err := mds.Update(ctx, md, metav1.UpdateOptions{}); return err }(),
		"delete a MachineDeployment": mds.Delete(ctx, "workers", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
		"create a MachineDeployment": func() error {
			u := &unstructured.Unstructured{Object: md.DeepCopy().Object}
			u.SetName("other")
			u.SetResourceVersion("")
			_, err := mds.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}(),
		"update a template": func() error { _, err := tmpls.Update(ctx, tmpl, metav1.UpdateOptions{}); return err }(),
		"list Clusters": func() error {
			_, err := sa.Dynamic.Resource(bootimage.ClustersResource).List(ctx, metav1.ListOptions{})
			return err
		}(),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the controller's ServiceAccount may %s: %v, want forbidden", what, err)
		}
	}
}
