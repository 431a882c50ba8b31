package kube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestDetectMCO finds each sign of MCO on its own, and nothing on a cluster without
// them.
func TestDetectMCO(t *testing.T) {
	ctx := kubetest.Context(t)
	found, evidence, err := DetectMCO(ctx, env.Kube)
	if err != nil || found {
		t.Fatalf("on a cluster without MCO: found=%t evidence=%q err=%v", found, evidence, err)
	}

	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MCONamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "mco"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/mco"}}},
	}
	t.Run("daemonset", func(t *testing.T) {
		// kubetest cannot import kube: its copy of the names must stay the same.
		if kubetest.MCONamespace != MCONamespace || kubetest.MCODaemonSet != MCODaemonSet {
			t.Fatalf("kubetest's fake MCO is %s/%s, kube looks for %s/%s", kubetest.MCONamespace, kubetest.MCODaemonSet, MCONamespace, MCODaemonSet)
		}
		kubetest.InstallFakeMCO(t, env.Kube)
		expectMCO(t, "DaemonSet openshift-machine-config-operator/machine-config-daemon")
	})
	t.Run("deployment", func(t *testing.T) {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: MCODeployment, Namespace: MCONamespace},
			Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
		}
		if _, err := env.Kube.AppsV1().Deployments(MCONamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer env.Kube.AppsV1().Deployments(MCONamespace).Delete(context.Background(), MCODeployment, metav1.DeleteOptions{})
		expectMCO(t, "Deployment openshift-machine-config-operator/machine-config-operator")
	})
	t.Run("clusteroperator", func(t *testing.T) {
		installClusterOperatorCRD(t)
		co := schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusteroperators"}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
			"metadata": map[string]any{"name": MCOClusterOperator},
			"spec":     map[string]any{},
		}}
		if _, err := env.Dynamic.Resource(co).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer env.Dynamic.Resource(co).Delete(context.Background(), MCOClusterOperator, metav1.DeleteOptions{})
		expectMCO(t, "ClusterOperator machine-config")
	})

	found, _, err = DetectMCO(ctx, env.Kube)
	if err != nil || found {
		t.Fatalf("after removing every sign of MCO: found=%t err=%v", found, err)
	}
}

func expectMCO(t *testing.T, what string) {
	t.Helper()
	found, evidence, err := DetectMCO(kubetest.Context(t), env.Kube)
	if err != nil || !found || !strings.Contains(evidence, "found "+what) {
		t.Fatalf("found=%t evidence=%q err=%v, want evidence naming %s", found, evidence, err, what)
	}
}

// installClusterOperatorCRD installs OpenShift's ClusterOperator CRD from the
// github.com/openshift/api module, as on OpenShift, and waits until it is served.
func installClusterOperatorCRD(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("find github.com/openshift/api: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "config", "v1", "zz_generated.crd-manifests", "0000_00_cluster-version-operator_01_clusteroperators.crd.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := kubetest.Context(t)
	if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ok, err := Served(env.Kube.Discovery(), schema.GroupVersion{Group: "config.openshift.io", Version: "v1"}, "clusteroperators")
		return ok, err
	})
	if err != nil {
		t.Fatalf("ClusterOperator CRD not served: %v", err)
	}
}
