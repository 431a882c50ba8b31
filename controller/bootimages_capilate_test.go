package controller_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestBootImagesCAPIInstalledLater: the controller, running as the ServiceAccount that
// `install --boot-images` binds, starts on a cluster without Cluster API; the CRDs are
// installed afterwards, then a MachineDeployment is created, and the controller moves
// it to a template of the target image without a restart (the resync an hour away: only
// its late watch can). It did so with the rights it had: it still may not read
// CustomResourceDefinitions, nor write MachineDeployments beyond its patch.
//
// Its own control plane: the package's shared one may have Cluster API installed by an
// earlier test.
func TestBootImagesCAPIInstalledLater(t *testing.T) {
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
	bootImageTargetsIn(t, e) // the Machine API namespace the install's Role binds in, too
	const ns = "mcotui"
	var manifests bytes.Buffer
	if err := deploy.Write(&manifests, deploy.Options{Namespace: ns, Image: "ghcr.io/mcotui/mcotui:test", Version: "test", BootImages: true}); err != nil {
		t.Fatal(err)
	}
	apply := e.KubectlCommand(ctx, "apply", "-f", "-")
	apply.Stdin = &manifests
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply the install: %v\n%s", err, out)
	}
	setModeIn(t, e, operatorv1.MachineManagerSelector{Mode: operatorv1.All})
	token, err := e.ServiceAccountToken(ctx, ns, "mcotui-controller")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteTokenKubeconfig(kubeconfig, token); err != nil {
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

	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(runCtx, controller.Config{Clients: sa, Namespace: ns, LeaseName: "lease-capi-later", Identity: "capi-later",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Resync: time.Hour, Rediscover: 200 * time.Millisecond, Logger: testLogger(t), Version: "test"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
	})
	// Its term has started without Cluster API: the first boot image sync is done.
	kubetest.Eventually(t, 30*time.Second, "the first boot image sync", func() (bool, string) {
		cfg, err := e.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionProgressing)
		return c != nil && c.Status == metav1.ConditionFalse, "no Progressing=False yet"
	})
	if _, err := e.Dynamic.Resource(bootimage.MachineDeploymentsResource).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("list machinedeployments before Cluster API is installed: %v, want NotFound", err)
	}

	installCAPICRDsIn(t, e)
	mdNS, err := e.CreateNamespace(ctx, "capi-later-")
	if err != nil {
		t.Fatal(err)
	}
	createObjIn(t, e, bootimage.ClustersResource, mdNS, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: boot}\nspec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: boot}}\n")
	createObjIn(t, e, bootimage.AWSClustersResource, mdNS, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSCluster\nmetadata: {name: boot}\nspec: {region: us-east-1}\n")
	createObjIn(t, e, bootimage.AWSMachineTemplatesResource, mdNS, awsTemplate("aws-old", awsOld, ""))
	arch := "  annotations: {" + bootimage.ArchAnnotation + ": kubernetes.io/arch=amd64}"
	md := createObjIn(t, e, bootimage.MachineDeploymentsResource, mdNS, machineDeployment("later-md", "aws-old", "AWSMachineTemplate", arch))
	moved := waitMovedIn(t, e, md)
	if tmpl, err := e.Dynamic.Resource(bootimage.AWSMachineTemplatesResource).Namespace(mdNS).Get(ctx, moved, metav1.GetOptions{}); err != nil || nested(tmpl, "spec", "template", "spec", "ami", "id") != awsTarget {
		t.Errorf("later-md's new template %s: %v, want AMI %s", moved, err, awsTarget)
	}

	// What it did not need: CustomResourceDefinitions (discovery told it), and any
	// MachineDeployment write but its patch.
	for _, verb := range []string{"get", "list", "watch"} {
		review, err := sa.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed {
			t.Errorf("the controller may %s customresourcedefinitions", verb)
		}
	}
	if _, err := sa.Kube.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").DoRaw(ctx); !apierrors.IsForbidden(err) {
		t.Errorf("the controller lists customresourcedefinitions: %v, want Forbidden", err)
	}
	mds := sa.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(mdNS)
	cur, err := mds.Get(ctx, md.GetName(), metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the controller gets machinedeployment %s/%s: %v, want Forbidden", mdNS, md.GetName(), err)
	}
	if cur == nil {
		cur = md
	}
	if _, err := mds.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller updates machinedeployment %s/%s: %v, want Forbidden", mdNS, md.GetName(), err)
	}
	if err := mds.Delete(ctx, md.GetName(), metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller deletes machinedeployment %s/%s: %v, want Forbidden", mdNS, md.GetName(), err)
	}
}
