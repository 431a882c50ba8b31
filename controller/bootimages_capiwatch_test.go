package controller_test

import (
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestBootImagesWatchMachineDeployments: with the resync an hour away and nothing
// else changing, a MachineDeployment created after the controller started is moved to
// a template of the target image by the boot image loop's informer on
// MachineDeployments; one created before the template it names is moved once the
// template appears (the informer on templates).
func TestBootImagesWatchMachineDeployments(t *testing.T) {
	ctx := kubetest.Context(t)
	installCAPICRDs(t) // before the controller starts: it watches what is served then
	bootImageTargets(t)
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.All})
	startController(t, "lease-capi-watch", "capi-watch-a", func(c *controller.Config) { c.Resync = time.Hour })
	// The first sync is done: the conditions are written.
	kubetest.Eventually(t, 30*time.Second, "the first boot image sync", func() (bool, string) {
		cfg, err := env.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionProgressing)
		return c != nil && c.Status == metav1.ConditionFalse, "no Progressing=False yet"
	})

	ns, err := env.CreateNamespace(ctx, "capi-watch-")
	if err != nil {
		t.Fatal(err)
	}
	createObj(t, bootimage.ClustersResource, ns, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: boot}\nspec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: boot}}\n")
	createObj(t, bootimage.AWSClustersResource, ns, "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSCluster\nmetadata: {name: boot}\nspec: {region: us-east-1}\n")
	createObj(t, bootimage.AWSMachineTemplatesResource, ns, awsTemplate("aws-old", awsOld, ""))
	arch := "  annotations: {" + bootimage.ArchAnnotation + ": kubernetes.io/arch=amd64}"

	// A new MachineDeployment.
	md := createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("new-md", "aws-old", "AWSMachineTemplate", arch))
	moved := waitMoved(t, md)
	if tmpl, err := env.Dynamic.Resource(bootimage.AWSMachineTemplatesResource).Namespace(ns).Get(ctx, moved, metav1.GetOptions{}); err != nil || nested(tmpl, "spec", "template", "spec", "ami", "id") != awsTarget {
		t.Errorf("new-md's new template %s: %v, want AMI %s", moved, err, awsTarget)
	}

	// A MachineDeployment whose template comes after it: its sync fails until then.
	md = createObj(t, bootimage.MachineDeploymentsResource, ns, machineDeployment("early-md", "late", "AWSMachineTemplate", arch))
	kubetest.Eventually(t, 30*time.Second, "the boot image loop fails on early-md's missing template", func() (bool, string) {
		cfg, err := env.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue, "Degraded: " + c.Message
	})
	createObj(t, bootimage.AWSMachineTemplatesResource, ns, awsTemplate("late", awsOld, ""))
	waitMoved(t, md)
}

// waitMoved watches md until its infrastructureRef names another template than at
// creation, and returns that template's name. It waits on the watch's events alone,
// for as long as the test may run: with the resync an hour away, only the boot image
// loop's informers can move it.
func waitMoved(t *testing.T, md *unstructured.Unstructured) string {
	t.Helper()
	return waitMovedIn(t, env, md)
}

// waitMovedIn is waitMoved on the control plane e.
func waitMovedIn(t *testing.T, e *kubetest.Env, md *unstructured.Unstructured) string {
	t.Helper()
	ctx := kubetest.Context(t)
	from := bootimage.InfrastructureRef(md).Name
	w, err := e.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(md.GetNamespace()).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + md.GetName(), ResourceVersion: md.GetResourceVersion(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch machinedeployment %s: %v", bootimage.MDName(md), ev.Object)
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if ref := bootimage.InfrastructureRef(u); ref.Name != from {
			return ref.Name
		}
	}
	t.Fatalf("machinedeployment %s still names %s: the watch ended (%v)", bootimage.MDName(md), from, ctx.Err())
	return ""
}
