package source

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/model"
)

// installCAPICRDs installs Cluster API's and its AWS and GCP providers' CRDs
// (testdata/capi-crds, from their Go modules) and waits until they are served.
func installCAPICRDs(t *testing.T) { t.Helper(); installCAPICRDsIn(t, env) }

// installCAPICRDsIn is installCAPICRDs on the control plane e.
func installCAPICRDsIn(t *testing.T, e *kubetest.Env) {
	t.Helper()
	ctx := kubetest.Context(t)
	if out, err := e.KubectlCommand(ctx, "apply", "--server-side", "--force-conflicts", "-f", "../../testdata/capi-crds").CombinedOutput(); err != nil {
		t.Fatalf("install the Cluster API CRDs: %v\n%s", err, out)
	}
	if out, err := e.KubectlCommand(ctx, "wait", "--for", "condition=Established", "--timeout", "120s",
		"crd/machinedeployments.cluster.x-k8s.io", "crd/clusters.cluster.x-k8s.io", "crd/awsclusters.infrastructure.cluster.x-k8s.io",
		"crd/awsmachinetemplates.infrastructure.cluster.x-k8s.io", "crd/gcpmachinetemplates.infrastructure.cluster.x-k8s.io").CombinedOutput(); err != nil {
		t.Fatalf("the Cluster API CRDs are not established: %v\n%s", err, out)
	}
}

// TestMachineDeployments: with Cluster API installed, the source feeds its
// MachineDeployments and what their boot image decision reads, so that the store
// decides as the controller does; a MachineDeployment created later arrives as an
// event. A user who may not read Cluster API's objects still gets a source that
// connects, without them.
func TestMachineDeployments(t *testing.T) {
	ctx := kubetest.Context(t)
	installCAPICRDs(t)
	ns, err := env.CreateNamespace(ctx, "tcapi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	const md = `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: NAME, namespace: NS, annotations: {"capacity.cluster-autoscaler.kubernetes.io/labels": "kubernetes.io/arch=amd64"}}
spec:
  clusterName: boot
  selector: {matchLabels: {md: x}}
  template:
    metadata: {labels: {md: x}}
    spec: {clusterName: boot, bootstrap: {dataSecretName: x}, infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: workers}}
`
	create := func(doc string) {
		t.Helper()
		cmd := env.KubectlCommand(ctx, "create", "-f", "-")
		cmd.Stdin = strings.NewReader(strings.ReplaceAll(doc, "NS", ns))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("create: %v\n%s", err, out)
		}
	}
	create(`apiVersion: cluster.x-k8s.io/v1beta2
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
---
` + strings.ReplaceAll(md, "NAME", "first"))

	c := newCluster(t, env.Config, Options{})
	s := c.Subscribe()
	defer s.Close()
	store := model.NewStore()
	store.Apply(s.Snapshot())
	var mine []string
	for _, u := range store.MachineDeployments() {
		if u.GetNamespace() == ns {
			mine = append(mine, u.GetName())
		}
	}
	if len(mine) != 1 || mine[0] != "first" {
		t.Fatalf("the store's MachineDeployments in %s: %v, want first", ns, mine)
	}
	stream, err := bootimage.ParseStream(readStream(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err := bootimage.DecideMachineDeployment(store.MachineDeployments()[0], store.CAPIObject, stream, bootimage.Options{})
	if err != nil || res.Outcome != bootimage.Patch || res.Current != "ami-0fe05b1aa8dacfa90" || res.Target != "ami-0e5d1a7b2c8f3e496" {
		t.Errorf("decided from the source's objects: %s %s -> %s, %v; want Patch to us-east-1's AMI", res.Outcome, res.Current, res.Target, err)
	}

	create(strings.ReplaceAll(md, "NAME", "second"))
	next(t, s, "the second MachineDeployment", func(e model.Event) bool {
		return e.Kind == model.KindCAPI && e.CAPI.GetKind() == "MachineDeployment" && e.CAPI.GetNamespace() == ns && e.CAPI.GetName() == "second"
	})

	// A user who may read what the TUI reads but Cluster API's objects.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "tcapi-reader-"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"", "machineconfiguration.openshift.io", "operator.openshift.io", "machine.openshift.io", "config.openshift.io"},
		Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"},
	}}}
	if role, err = env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "reader"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	token, err := env.ServiceAccountToken(ctx, ns, "reader")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	reader := newCluster(t, cfg, Options{}) // connects: no informer retries a refused list
	rs := reader.Subscribe()
	defer rs.Close()
	for _, e := range rs.Snapshot() {
		if e.Kind == model.KindCAPI {
			t.Fatalf("a user who may not read Cluster API's objects got %s %s", e.CAPI.GetKind(), e.CAPI.GetName())
		}
	}
	if h := reader.Health(); h.State != model.Connected {
		t.Errorf("the reader's source: %v %s, want connected", h.State, h.Err)
	}
}

// readStream is core/bootimage's test stream, whose us-east-1 x86_64 AMI is
// ami-0e5d1a7b2c8f3e496.
func readStream(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../core/bootimage/testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMachineDeploymentsInstalledLater: a source connected to a cluster without
// Cluster API watches its resources once their CRDs are installed, without a restart:
// a MachineDeployment created then arrives as an event, with the template and Cluster
// its decision reads, and a later subscription has them in its snapshot. Its own
// control plane: the package's shared one may have Cluster API installed already.
func TestMachineDeploymentsInstalledLater(t *testing.T) {
	ctx := kubetest.Context(t)
	e, err := kubetest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})
	c := newCluster(t, e.Config, Options{Rediscover: 200 * time.Millisecond})
	s := c.Subscribe()
	defer s.Close()
	for _, ev := range s.Snapshot() {
		if ev.Kind == model.KindCAPI {
			t.Fatalf("a cluster without Cluster API: got %s %s", ev.CAPI.GetKind(), ev.CAPI.GetName())
		}
	}

	installCAPICRDsIn(t, e)
	ns, err := e.CreateNamespace(ctx, "tcapi-later-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.KubectlCommand(ctx, "create", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: boot}
spec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: boot}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: workers}
spec: {template: {spec: {instanceType: m6i.large, ami: {id: ami-0fe05b1aa8dacfa90}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: later}
spec:
  clusterName: boot
  selector: {matchLabels: {md: x}}
  template:
    metadata: {labels: {md: x}}
    spec: {clusterName: boot, bootstrap: {dataSecretName: x}, infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: workers}}
`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	isCAPI := func(kind, name string) func(model.Event) bool {
		return func(ev model.Event) bool {
			return ev.Kind == model.KindCAPI && ev.CAPI.GetKind() == kind && ev.CAPI.GetNamespace() == ns && ev.CAPI.GetName() == name
		}
	}
	next(t, s, "the MachineDeployment created after its CRD", isCAPI("MachineDeployment", "later"))

	later := c.Subscribe()
	defer later.Close()
	store := model.NewStore()
	store.Apply(later.Snapshot())
	if len(store.MachineDeployments()) != 1 {
		t.Fatalf("a later subscription's MachineDeployments: %d, want 1", len(store.MachineDeployments()))
	}
	if md := store.MachineDeployments()[0]; md.GetNamespace() != ns || md.GetName() != "later" {
		t.Errorf("a later subscription's MachineDeployment: %s/%s, want %s/later", md.GetNamespace(), md.GetName(), ns)
	}
	for _, ref := range []struct{ gvr, name string }{{"awsmachinetemplates", "workers"}, {"clusters", "boot"}} {
		kubetest.Eventually(t, 30*time.Second, ref.gvr+" "+ref.name+" in the source", func() (bool, string) {
			sub := c.Subscribe()
			defer sub.Close()
			for _, ev := range sub.Snapshot() {
				if ev.Kind == model.KindCAPI && ev.CAPI.GetNamespace() == ns && ev.CAPI.GetName() == ref.name && strings.EqualFold(ev.CAPI.GetKind()+"s", ref.gvr) {
					return true, ""
				}
			}
			return false, "not in a new subscription's snapshot"
		})
	}
	if h := c.Health(); h.State != model.Connected {
		t.Errorf("the source after Cluster API's arrival: %v %s, want connected", h.State, h.Err)
	}
}
