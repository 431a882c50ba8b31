package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mcotui/mcotui/core/bootimage"
)

// TestCAPIEventFilters: Cluster API's status writes on a MachineDeployment (every
// replica change) do not sync the boot image loop; changes of what its decision reads
// do.
func TestCAPIEventFilters(t *testing.T) {
	base := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": "md", "namespace": "ns", "resourceVersion": "1", "generation": int64(3),
			"labels": map[string]any{"a": "b"}, "annotations": map[string]any{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}},
		"spec":   map[string]any{"replicas": int64(3)},
		"status": map[string]any{"replicas": int64(2)},
	}}
	change := func(edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := base.DeepCopy()
		u.SetResourceVersion("2")
		edit(u)
		return u
	}
	for _, c := range []struct {
		name    string
		cur     *unstructured.Unstructured
		matters bool
	}{
		{"resync", base.DeepCopy(), true},
		{"status only", change(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "status", "replicas")
		}), false},
		{"another annotation", change(func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64", "x": "y"})
		}), false},
		{"spec", change(func(u *unstructured.Unstructured) { u.SetGeneration(4) }), true},
		{"labels", change(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "c"}) }), true},
		{"architecture", change(func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=arm64"})
		}), true},
		{"controller owner", change(func(u *unstructured.Unstructured) {
			yes := true
			u.SetOwnerReferences([]metav1.OwnerReference{{Kind: "NodeGroup", Name: "p", UID: "u", Controller: &yes}})
		}), true},
	} {
		if got := machineDeploymentChangeMatters(base, c.cur); got != c.matters {
			t.Errorf("MachineDeployment %s: matters %t, want %t", c.name, got, c.matters)
		}
	}

	tmpl := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "t", "resourceVersion": "1", "generation": int64(1)}}}
	relabelled := tmpl.DeepCopy()
	relabelled.SetResourceVersion("2")
	relabelled.SetLabels(map[string]string{"x": "y"})
	if machineTemplateChangeMatters(tmpl, relabelled) {
		t.Error("a template's new label syncs the boot image loop")
	}
	ours := relabelled.DeepCopy()
	ours.SetAnnotations(map[string]string{bootimage.TemplateOfAnnotation: "t0"})
	if !machineTemplateChangeMatters(tmpl, ours) {
		t.Error("a template's copy annotation does not sync the boot image loop")
	}
	spec := relabelled.DeepCopy()
	spec.SetGeneration(2)
	if !machineTemplateChangeMatters(tmpl, spec) {
		t.Error("a template's spec change does not sync the boot image loop")
	}
}
