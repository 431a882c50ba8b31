package source

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestDrainForecastRead: the read behind the TUI preview's drain forecast, against the
// real API server with pods kwok runs on kwok nodes, one of each kind that blocks or
// loses data: a pod under a budget that allows no disruption, a bare pod, a pod with
// an emptyDir, a pod on a local persistent volume; a DaemonSet's pod (which a drain
// leaves alone) is not in it. A user who may not list pods gets the API server's
// refusal, naming what was read, rather than an empty forecast.
func TestDrainForecastRead(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "tdf-")
	if err != nil {
		t.Fatal(err)
	}
	var members []*corev1.Node
	var names []string
	for _, suffix := range []string{"-a", "-b", "-c"} {
		n, err := env.CreateNode(ctx, ns+suffix, map[string]string{"node-role.kubernetes.io/tdf": ""})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
		members, names = append(members, n), append(names, n.Name)
	}
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "00000000-0000-0000-0000-000000000001", Controller: ptr(true)}}
	}
	run := func(name, node string, owners []metav1.OwnerReference, vols ...corev1.Volume) {
		t.Helper()
		_, err := env.RunPod(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node, Volumes: vols, Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	run("guarded", names[0], owned("ReplicaSet"))
	kubetest.CreateBudget(t, env.Kube, ns, "guarded", 0)
	run("bare", names[1], nil)
	run("cache", names[2], owned("ReplicaSet"), corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	run("agent", names[2], owned("DaemonSet"), corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pv, err := env.Kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-local"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{names[2]}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	if _, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv.Name, StorageClassName: ptr(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run("db", names[2], owned("StatefulSet"), corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})

	c := newCluster(t, env.Config, Options{Context: "test"})
	rep, err := c.DrainForecast(ctx, members, names, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Risks {
		got = append(got, r.Node+" "+r.Pod+" "+string(r.Kind))
	}
	want := []string{
		names[0] + " " + ns + "/guarded " + string(drainforecast.BudgetExhausted),
		names[1] + " " + ns + "/bare " + string(drainforecast.Unmanaged),
		names[2] + " " + ns + "/cache " + string(drainforecast.EmptyDir),
		names[2] + " " + ns + "/db " + string(drainforecast.LocalVolume),
	}
	if !slices.Equal(got, want) {
		t.Errorf("risks:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if b := rep.Blocking(); !slices.Equal(b, names[:1]) {
		t.Errorf("blocking nodes %v, want %v", b, names[:1])
	}
	if len(rep.Capacity.Cordoned) != 1 || rep.Capacity.Cordoned[0] != names[2] {
		t.Errorf("capacity assumes %v cordoned, want the busiest node %s", rep.Capacity.Cordoned, names[2])
	}

	// A user with no right to list pods: the API server's refusal, not an empty
	// forecast that would read as "nothing blocks".
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tdf-no-pods"}
	nobody, err := New(context.Background(), cfg, Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nobody.Close)
	_, err = nobody.DrainForecast(ctx, members, names, 1)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "list pods for the drain forecast") {
		t.Fatalf("forecast without the right to list pods: %v, want forbidden naming the read", err)
	}
}
