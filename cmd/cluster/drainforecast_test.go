package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestRolloutPlanDrainForecast: before anything starts, `mcotui rollout POOL` names
// each node whose drain blocks or loses data, on the real API server with kwok's
// nodes and pods: a pod under a PodDisruptionBudget that allows no disruption, a pod
// no controller manages, a pod with an emptyDir, a pod on a local persistent volume;
// a DaemonSet's pod is left out, as the drain leaves it.
func TestRolloutPlanDrainForecast(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	c := cmdtest.NewRolloutCluster(t, env, "df", 3, ptr.To(intstr.FromInt32(1)))
	// Rendered by hand, and no controller: nothing starts; the plan is all there is.
	mc, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, "00-df", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RenderByHand(t, env.MachineConfig, "df", mc)
	ns, err := env.CreateNamespace(ctx, "df-")
	if err != nil {
		t.Fatal(err)
	}
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}}
	}
	pod := func(name, node string, owners []metav1.OwnerReference, vols ...corev1.Volume) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node, Volumes: vols, Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		}
		if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("guarded", c.Nodes[0], owned("ReplicaSet"))
	kubetest.CreateBudget(t, env.Kube, ns, "guarded", 0)
	pod("bare", c.Nodes[1], nil)
	pod("cache", c.Nodes[2], owned("ReplicaSet"), corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod("agent", c.Nodes[2], owned("DaemonSet"), corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-local"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{c.Nodes[2]}}},
			}}}},
		},
	}
	if _, err := env.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().PersistentVolumes().Delete(t.Context(), pv.Name, metav1.DeleteOptions{}) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv.Name, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod("db", c.Nodes[2], owned("StatefulSet"), corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})

	code, out, errOut := runMcotui(t, env, "rollout", "df")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("mcotui rollout df:\n%s", out)
	for _, want := range []string{
		"Drain forecast: 3 node(s) drain; 1 will block:",
		"  " + c.Nodes[0] + ": pod " + ns + "/guarded: PodDisruptionBudget " + ns + "/guarded allows 0 disruptions now: the drain blocks",
		"  " + c.Nodes[1] + ": pod " + ns + "/bare: not managed by a controller: deleted, not recreated",
		"  " + c.Nodes[2] + ": pod " + ns + "/cache: emptyDir scratch: its data is deleted",
		"  " + c.Nodes[2] + ": pod " + ns + "/db: volume data (persistentvolume " + pv.Name + ") is local to the node: the pod waits for the node to come back",
		"  capacity: with " + c.Nodes[2] + " cordoned, their pods request 0.2 CPU, 0 memory;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "/agent") {
		t.Errorf("the DaemonSet's pod is in the forecast:\n%s", out)
	}
}
