package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "health.mcotui.test", Version: "v1", Resource: "storageclusters"}
)

// installStorageClusterCRD installs a CRD standing in for a storage operator's
// (Rook's CephCluster): namespaced StorageClusters with a free-form status, and waits
// until the API server serves it.
func installStorageClusterCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := kubetest.Context(t)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "storageclusters.health.mcotui.test"},
		"spec": map[string]any{
			"group": "health.mcotui.test", "scope": "Namespaced",
			"names": map[string]any{"plural": "storageclusters", "singular": "storagecluster", "kind": "StorageCluster", "listKind": "StorageClusterList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdGVR).Delete(context.Background(), "storageclusters.health.mcotui.test", metav1.DeleteOptions{})
	})
	kubetest.Eventually(t, time.Minute, "CRD storageclusters established", func() (bool, string) {
		_, err := dyn.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func setHealth(t *testing.T, dyn dynamic.Interface, ns, name, health string) {
	t.Helper()
	ctx := kubetest.Context(t)
	res := dyn.Resource(widgetGVR).Namespace(ns)
	o, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		o = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "health.mcotui.test/v1", "kind": "StorageCluster",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "storage"}},
		}}
		o.Object["status"] = map[string]any{"ceph": map[string]any{"health": health}}
		if _, err := res.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	o.Object["status"] = map[string]any{"ceph": map[string]any{"health": health}}
	if _, err := res.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCELHealthCheckGatesTheRollout: a pool whose health check reads a custom
// resource (a storage cluster's health, through the dynamic client, by a selector)
// targets no node while the expression is false, saying which object and expression;
// once the object is healthy the controller looks again (its gate poll, on its clock)
// and the rollout goes on.
func TestCELHealthCheckGatesTheRollout(t *testing.T) {
	c := clients(t)
	installStorageClusterCRD(t, c.Dynamic)
	ns, err := env.CreateNamespace(kubetest.Context(t), "storage-")
	if err != nil {
		t.Fatal(err)
	}
	setHealth(t, c.Dynamic, ns, "rook", "HEALTH_WARN")
	fc := testingclock.NewFakeClock(time.Now())
	pool := createPool(t, "pcel", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "pcel", map[string]any{policy.HealthChecksKey: fmt.Sprintf(`
- name: storage
  apiVersion: health.mcotui.test/v1
  kind: StorageCluster
  namespace: %s
  selector: app=storage
  expression: object.status.ceph.health == 'HEALTH_OK'
`, ns)})
	v1 := machineConfig(t, "00-pcel", "pcel", "/etc/pcel", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pcel", "rendered-pcel-old", "", "")
	startFakeAgent(t, "pcel", 200*time.Millisecond)
	rec := recordNodes(t, "pcel")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-pcel", "pcel-ctrl", func(cfg *controller.Config) { cfg.Clock = fc })

	waitHeld(t, "pcel", corev1.ConditionTrue, "GateFailing",
		"held by a health gate: health check storage: storagecluster "+ns+"/rook is not healthy (object.status.ceph.health == 'HEALTH_OK' is false)")
	if _, _, order, _ := rec.report(); len(order) != 0 {
		t.Fatalf("while the storage cluster was unhealthy the controller targeted %v", order)
	}
	setHealth(t, c.Dynamic, ns, "rook", "HEALTH_OK")
	fc.Step(30 * time.Second)
	waitDone(t, target, nodes...)
	waitHeld(t, "pcel", corev1.ConditionFalse, "AsExpected", "")
	if _, _, order, _ := rec.report(); !slices.Equal(order, nodes) {
		t.Errorf("targeted %v, want %v", order, nodes)
	}
}

// TestHaltOnUnhealthyNodes: with halt-unhealthy-nodes 1, the first node failing its
// update halts the rollout: RolloutHeld UnhealthyNodes names it, and no other node is
// targeted, though a failing node takes no maxUnavailable slot (MCO's rule), so that
// without the halt the next would go.
func TestHaltOnUnhealthyNodes(t *testing.T) {
	pool := createPool(t, "phalt", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "phalt", map[string]any{policy.HaltUnhealthyKey: "1", policy.OrderKey: "OldestFirst"})
	v1 := machineConfig(t, "00-phalt", "phalt", "/etc/phalt", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "phalt", "rendered-phalt-old", "", "", "")
	startFakeAgent(t, "phalt", 200*time.Millisecond, nodes[0])
	applyMC(t, v1)
	startController(t, "lease-phalt", "phalt-ctrl")

	waitHeld(t, "phalt", corev1.ConditionTrue, "UnhealthyNodes",
		"halted: 1 nodes updated by this rollout are unhealthy (mcotui.io/halt-unhealthy-nodes is 1): "+nodes[0])
	// Another sync (a node change) still halts; the other nodes were never targeted.
	annotate(t, nodes[2], map[string]any{"example.com/touch": "1"})
	waitHeld(t, "phalt", corev1.ConditionTrue, "UnhealthyNodes", nodes[0])
	for _, n := range nodes[1:] {
		if got := nodeanno.Desired(getNode(t, n)); got == target {
			t.Errorf("node %s was targeted after the halt", n)
		}
	}
}
