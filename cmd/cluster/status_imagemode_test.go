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
	imageModePool(t, env, "layered", "layered-4a5b6c", "Building")
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

// TestRolloutWaitFollowsBuild: rollout --wait on an image mode pool follows MCO's OS
// image build before the nodes: a failed build ends it with exit 1 and MCO's words.
func TestRolloutWaitFollowsBuild(t *testing.T) {
	env := cluster.Env(t)
	imageModePool(t, env, "oclwait", "oclwait-1f2e3d", "Failed")
	code, out, errOut := runMcotui(t, env, "rollout", "oclwait", "--wait", "--timeout", "30s", "--poll-interval", "100ms")
	if code != exitRolloutDegraded {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRolloutDegraded, out, errOut)
	}
	for _, want := range []string{
		"Image build oclwait-1f2e3d of rendered-oclwait-1: Failed (2m",
		"Pool update stopped due to OS image build failure (mosb: oclwait-1f2e3d)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// imageModePool creates pool name with a rendered config, its MachineOSConfig and a
// build of that config named build whose state is Building or Failed, started two
// minutes ago; all deleted when the test ends.
func imageModePool(t *testing.T, env *kubetest.Env, name, build, state string) {
	t.Helper()
	ctx := kubetest.Context(t)
	api := env.MachineConfig.MachineconfigurationV1()
	pool, err := api.MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: name}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
			Configuration:         mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: "rendered-" + name + "-1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineConfigPools().Delete(context.Background(), pool.Name, metav1.DeleteOptions{}) })
	mosc, err := api.MachineOSConfigs().Create(ctx, &mcfgv1.MachineOSConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineOSConfigSpec{
			MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: name},
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
		ObjectMeta: metav1.ObjectMeta{Name: build},
		Spec: mcfgv1.MachineOSBuildSpec{
			MachineConfig:         mcfgv1.MachineConfigReference{Name: "rendered-" + name + "-1"},
			MachineOSConfig:       mcfgv1.MachineOSConfigReference{Name: name},
			RenderedImagePushSpec: mcfgv1.ImageTagFormat("registry.example.com/ocl/os-image:" + build),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSBuilds().Delete(context.Background(), mosb.Name, metav1.DeleteOptions{}) })
	started := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	cond := func(t string) metav1.Condition {
		st := metav1.ConditionFalse
		if t == "Prepared" || t == state {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: state, Message: "Image Build " + state, LastTransitionTime: started}
	}
	mosb.Status = mcfgv1.MachineOSBuildStatus{BuildStart: &started}
	for _, t := range []string{"Prepared", "Building", "Succeeded", "Interrupted", "Failed"} {
		mosb.Status.Conditions = append(mosb.Status.Conditions, cond(t))
	}
	if state != "Building" {
		mosb.Status.BuildEnd = &metav1.Time{Time: started.Add(2 * time.Minute)}
	}
	if _, err := api.MachineOSBuilds().UpdateStatus(ctx, mosb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
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
