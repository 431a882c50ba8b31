package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestStatusImageMode: against the real API server with the 2026 Default CRDs, a pool
// with a MachineOSConfig whose build is running says in MCO's words that it waits on
// the build, and status lists the MachineOSConfig and the build with the columns `oc
// get machineosbuilds` prints, plus pool, rendered config and duration.
func TestStatusImageMode(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	api := env.MachineConfig.MachineconfigurationV1()
	pool, err := api.MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "layered"},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "layered"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/layered": ""}},
			Configuration:         mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: "rendered-layered-1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineConfigPools().Delete(context.Background(), pool.Name, metav1.DeleteOptions{}) })
	mosc, err := api.MachineOSConfigs().Create(ctx, &mcfgv1.MachineOSConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "layered"},
		Spec: mcfgv1.MachineOSConfigSpec{
			MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: "layered"},
			ImageBuilder:            mcfgv1.MachineOSImageBuilder{ImageBuilderType: mcfgv1.JobBuilder},
			RenderedImagePushSecret: mcfgv1.ImageSecretObjectReference{Name: "push"},
			RenderedImagePushSpec:   "registry.example.com/ocl/os-image:latest",
			Containerfile:           []mcfgv1.MachineOSContainerfile{{ContainerfileArch: mcfgv1.NoArch, Content: "FROM configs AS final\n"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSConfigs().Delete(context.Background(), mosc.Name, metav1.DeleteOptions{}) })
	mosb, err := api.MachineOSBuilds().Create(ctx, &mcfgv1.MachineOSBuild{
		ObjectMeta: metav1.ObjectMeta{Name: "layered-4a5b6c"},
		Spec: mcfgv1.MachineOSBuildSpec{
			MachineConfig:         mcfgv1.MachineConfigReference{Name: "rendered-layered-1"},
			MachineOSConfig:       mcfgv1.MachineOSConfigReference{Name: "layered"},
			RenderedImagePushSpec: "registry.example.com/ocl/os-image:layered-4a5b6c",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSBuilds().Delete(context.Background(), mosb.Name, metav1.DeleteOptions{}) })
	started := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	mosb.Status = mcfgv1.MachineOSBuildStatus{
		BuildStart: &started,
		Conditions: []metav1.Condition{
			{Type: "Prepared", Status: metav1.ConditionTrue, Reason: "Prepared", Message: "Build Prepared and Pending", LastTransitionTime: started},
			{Type: "Building", Status: metav1.ConditionTrue, Reason: "Building", Message: "Image Build In Progress", LastTransitionTime: started},
			{Type: "Succeeded", Status: metav1.ConditionFalse, Reason: "Building", Message: "Image Build In Progress", LastTransitionTime: started},
			{Type: "Interrupted", Status: metav1.ConditionFalse, Reason: "Building", Message: "Image Build In Progress", LastTransitionTime: started},
			{Type: "Failed", Status: metav1.ConditionFalse, Reason: "Building", Message: "Image Build In Progress", LastTransitionTime: started},
		},
	}
	if _, err := api.MachineOSBuilds().UpdateStatus(ctx, mosb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	code, got, stderr := runMcotui(t, env, "status", "layered")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Pool is waiting for OS image build to complete (mosb: layered-4a5b6c)",
		"NAME      POOL      BUILD            STATE      CURRENTIMAGE   AGE",
		"layered   layered   layered-4a5b6c   Building",
		"NAME             PREPARED   BUILDING   SUCCEEDED   INTERRUPTED   FAILED   AGE   POOL      CONFIG               DURATION",
		"layered-4a5b6c   True       True       False       False         False",
		"layered   rendered-layered-1   2m",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}

// TestStatusOSStreams: with the OSImageStream singleton, status lists the cluster's
// streams (the default marked) and the stream each pool uses: its own, a custom pool's
// inherited from worker, else the default.
func TestStatusOSStreams(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	api := env.MachineConfig.MachineconfigurationV1()
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s, err := api.OSImageStreams().Create(ctx, &mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: mcfgv1.OSImageStreamSpec{DefaultStream: "rhel-10"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.OSImageStreams().Delete(context.Background(), "cluster", metav1.DeleteOptions{}) })
	s.Status = mcfgv1.OSImageStreamStatus{DefaultStream: "rhel-10", AvailableStreams: []mcfgv1.OSImageStreamSet{
		{Name: "rhel-9", OSImage: "quay.example.com/rhel-coreos" + digest, OSExtensionsImage: "quay.example.com/ext" + digest},
		{Name: "rhel-10", OSImage: "quay.example.com/rhel-coreos-10" + digest, OSExtensionsImage: "quay.example.com/ext-10" + digest},
	}}
	if _, err := api.OSImageStreams().UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*mcfgv1.MachineConfigPool{
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{OSImageStream: mcfgv1.OSImageStreamReference{Name: "rhel-9"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}},
	} {
		if _, err := api.MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = api.MachineConfigPools().Delete(context.Background(), p.Name, metav1.DeleteOptions{}) })
	}
	code, got, stderr := runMcotui(t, env, "status", "gpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"STREAM    DEFAULT   OSIMAGE",
		"rhel-10   yes       quay.example.com/rhel-coreos-10@sha256:",
		"POOL   STREAM   FROM",
		"gpu    rhel-9   worker pool",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}
