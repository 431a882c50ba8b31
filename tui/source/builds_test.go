package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// imageBuild creates, on the real API server with 2026's CRDs, pool name's
// MachineOSConfig and a MachineOSBuild building now, whose builder Job (in namespace
// ns) has a pod on a kwok node with MCO's two containers, Running; all deleted when the
// test ends. It returns the build's and the pod's names.
func imageBuild(ctx context.Context, t *testing.T, name, ns string) (build, pod string) {
	t.Helper()
	api := env.MachineConfig.MachineconfigurationV1()
	build = name + "-5c2f9a1e3b7d4c6e8f0a2b4c6d8e0f1a"
	mosc, err := api.MachineOSConfigs().Create(ctx, &mcfgv1.MachineOSConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{imagemode.CurrentBuildAnnotation: build}},
		Spec: mcfgv1.MachineOSConfigSpec{
			MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: name},
			ImageBuilder:            mcfgv1.MachineOSImageBuilder{ImageBuilderType: mcfgv1.JobBuilder},
			RenderedImagePushSecret: mcfgv1.ImageSecretObjectReference{Name: "push"},
			RenderedImagePushSpec:   "image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-image:latest",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSConfigs().Delete(context.Background(), mosc.Name, metav1.DeleteOptions{}) })
	mosb, err := api.MachineOSBuilds().Create(ctx, &mcfgv1.MachineOSBuild{
		ObjectMeta: metav1.ObjectMeta{Name: build},
		Spec: mcfgv1.MachineOSBuildSpec{
			MachineConfig:         mcfgv1.MachineConfigReference{Name: "rendered-" + name + "-f351f6947f15cd0380514f4b1c89f8f2"},
			MachineOSConfig:       mcfgv1.MachineOSConfigReference{Name: name},
			RenderedImagePushSpec: mcfgv1.ImageTagFormat("image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-image:" + build),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSBuilds().Delete(context.Background(), mosb.Name, metav1.DeleteOptions{}) })
	started := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	// As MCO's build controller writes a build in progress (MachineOSBuildRunningConditions).
	for _, c := range []struct {
		t      mcfgv1.BuildProgress
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{mcfgv1.MachineOSBuildPrepared, metav1.ConditionFalse, "Prepared", "Build Prepared and Pending"},
		{mcfgv1.MachineOSBuilding, metav1.ConditionTrue, "Building", "Image Build In Progress"},
		{mcfgv1.MachineOSBuildSucceeded, metav1.ConditionFalse, "Ready", "Build Ready"},
		{mcfgv1.MachineOSBuildInterrupted, metav1.ConditionFalse, "Interrupted", "Build Interrupted"},
		{mcfgv1.MachineOSBuildFailed, metav1.ConditionFalse, "Failed", "Build Failed"},
	} {
		mosb.Status.Conditions = append(mosb.Status.Conditions, metav1.Condition{Type: string(c.t), Status: c.status, Reason: c.reason, Message: c.msg, LastTransitionTime: started})
	}
	job := "build-" + build
	mosb.Status.BuildStart = &started
	mosb.Status.Builder = &mcfgv1.MachineOSBuilderReference{ImageBuilderType: mcfgv1.JobBuilder,
		Job: &mcfgv1.ObjectReference{Group: "batch", Resource: "jobs", Namespace: ns, Name: job}}
	if _, err := api.MachineOSBuilds().UpdateStatus(ctx, mosb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	node, err := env.CreateNode(ctx, name+"-builder-node", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	// No Job controller runs here: the pod is the Job's as the Job controller would
	// make it, by its label.
	p, err := env.RunPod(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job + "-x7k2p", Labels: map[string]string{imagemode.JobNameLabel: job, "job-name": job}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{
			{Name: imagemode.BuilderContainer, Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:machine-config-operator"},
			{Name: "create-digest-configmap", Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:machine-config-operator"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return build, p.Name
}

// TestTUIBuilds: on the real API server, the builds view (i) shows a MachineOSBuild in
// progress with its builder Job; l follows the image-build container's log through
// pods/log, which kwok serves as a kubelet would: lines written after it opened
// arrive on screen; r asks to confirm and then annotates the MachineOSConfig for MCO
// to rebuild; the cluster's OS image streams are listed with the pool on its stream.
func TestTUIBuilds(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "tbuild-")
	if err != nil {
		t.Fatal(err)
	}
	build, pod := imageBuild(ctx, t, "tbuild", ns)
	log, err := env.ServePodLog(ctx, ns, pod, imagemode.BuilderContainer)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Write("STEP 1/12: FROM quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:9e1c AS extract", "STEP 2/12: COPY ./machineconfig/machineconfig.json.gz /tmp/"); err != nil {
		t.Fatal(err)
	}
	api := env.MachineConfig.MachineconfigurationV1()
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s, err := api.OSImageStreams().Create(ctx, &mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: mcfgv1.OSImageStreamSpec{DefaultStream: "rhel-9"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.OSImageStreams().Delete(context.Background(), "cluster", metav1.DeleteOptions{}) })
	s.Status = mcfgv1.OSImageStreamStatus{DefaultStream: "rhel-9", AvailableStreams: []mcfgv1.OSImageStreamSet{
		{Name: "rhel-9", OSImage: "quay.example.com/rhel-coreos" + digest, OSExtensionsImage: "quay.example.com/ext" + digest},
		{Name: "rhel-10", OSImage: "quay.example.com/rhel-coreos-10" + digest, OSExtensionsImage: "quay.example.com/ext-10" + digest},
	}}
	if _, err := api.OSImageStreams().UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := clustertest.SeedPool(ctx, t, env, "tbuild", 1, 0)
	if _, err := api.MachineConfigPools().Patch(ctx, p.Name, "application/merge-patch+json", []byte(`{"spec":{"osImageStream":{"name":"rhel-10"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	c := newCluster(t, env.Config, Options{Context: "test"})
	r := programWith(t, c, tui.Options{Actions: NewActions(c, "test"), Pods: c, Refresh: -1})
	send(r, tuitest.Typed("i"))
	waitScreen(t, r, "▸ "+build)
	waitScreen(t, r, "Building")
	waitScreen(t, r, "Job build-"+build+" in "+ns)
	waitScreen(t, r, "rhel-10           tbuild")

	send(r, tuitest.Typed("l"))
	waitScreen(t, r, "Log of pod "+pod+", container image-build (following")
	waitScreen(t, r, "STEP 2/12: COPY ./machineconfig/machineconfig.json.gz /tmp/")
	// Written while the view follows: it arrives without a key.
	if err := log.Write("STEP 3/12: RUN ignition-apply --ignore-unsupported /tmp/machineconfig.json"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, r, "STEP 3/12: RUN ignition-apply")

	send(r, tuitest.Typed("r"))
	waitScreen(t, r, "Rebuild the OS image of pool tbuild")
	waitScreen(t, r, "MCO deletes MachineOSBuild "+build)
	if m, err := api.MachineOSConfigs().Get(ctx, "tbuild", metav1.GetOptions{}); err != nil || imagemode.RebuildPending(m) {
		t.Fatalf("MachineOSConfig tbuild before the confirmation: rebuild pending %v (%v)", m != nil && imagemode.RebuildPending(m), err)
	}
	send(r, tuitest.Typed("y"))
	waitScreen(t, r, "Asked MCO to rebuild the image of MachineOSConfig tbuild")
	clustertest.Eventually(ctx, t, "the rebuild annotation on MachineOSConfig tbuild", func(ctx context.Context) (bool, error) {
		m, err := api.MachineOSConfigs().Get(ctx, "tbuild", metav1.GetOptions{})
		return err == nil && imagemode.RebuildPending(m), err
	})
	// The view says a rebuild waits for MCO, from the watch.
	waitScreen(t, r, "asked for ("+imagemode.RebuildAnnotation+")")
}

// TestRebuildNeedsOnlyPatch: the rebuild is one merge patch of the MachineOSConfig, so
// an identity allowed only to patch machineosconfigs makes it, and one without that
// is refused with an error naming the MachineOSConfig, changing nothing.
func TestRebuildNeedsOnlyPatch(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "trebuild-")
	if err != nil {
		t.Fatal(err)
	}
	api := env.MachineConfig.MachineconfigurationV1()
	mosc, err := api.MachineOSConfigs().Create(ctx, &mcfgv1.MachineOSConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "trebuild"},
		Spec: mcfgv1.MachineOSConfigSpec{
			MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: "trebuild"},
			ImageBuilder:            mcfgv1.MachineOSImageBuilder{ImageBuilderType: mcfgv1.JobBuilder},
			RenderedImagePushSecret: mcfgv1.ImageSecretObjectReference{Name: "push"},
			RenderedImagePushSpec:   "registry.example.com/ocl/os-image:latest",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineOSConfigs().Delete(context.Background(), mosc.Name, metav1.DeleteOptions{}) })
	role, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "rebuild-"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{mcfgv1.GroupName}, Resources: []string{"machineosconfigs"}, Verbs: []string{"patch"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	user := "rebuilder@" + ns
	binding, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "rebuild-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	as := func(name string) *kube.Clients {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
		cl, err := kube.NewClients(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}

	err = kube.RequestRebuild(ctx, as("someone-else@"+ns), "trebuild", FieldManager)
	if !apierrors.IsForbidden(errors.Unwrap(err)) || !strings.Contains(err.Error(), "MachineOSConfig trebuild") {
		t.Fatalf("a rebuild by an identity without patch: %v, want Forbidden naming MachineOSConfig trebuild", err)
	}
	if m, err := api.MachineOSConfigs().Get(ctx, "trebuild", metav1.GetOptions{}); err != nil || imagemode.RebuildPending(m) {
		t.Fatalf("MachineOSConfig trebuild after a refused rebuild: pending %v (%v)", m != nil && imagemode.RebuildPending(m), err)
	}
	// RBAC is read by the API server's authorizer from its own informers: the binding
	// may take a moment to count.
	clustertest.Eventually(ctx, t, "a rebuild by an identity allowed only to patch machineosconfigs", func(ctx context.Context) (bool, error) {
		err := kube.RequestRebuild(ctx, as(user), "trebuild", FieldManager)
		if apierrors.IsForbidden(errors.Unwrap(err)) {
			return false, nil
		}
		return err == nil, err
	})
	m, err := api.MachineOSConfigs().Get(ctx, "trebuild", metav1.GetOptions{})
	if err != nil || !imagemode.RebuildPending(m) {
		t.Fatalf("MachineOSConfig trebuild after the rebuild: pending %v (%v)", m != nil && imagemode.RebuildPending(m), err)
	}
	if err := kube.RequestRebuild(ctx, as(user), "nosuchpool", FieldManager); !apierrors.IsNotFound(errors.Unwrap(err)) {
		t.Fatalf("a rebuild of a MachineOSConfig that does not exist: %v, want NotFound", err)
	}
}

// TestSourceWithoutBuildsAccess: an identity that may read everything the TUI draws but
// MachineOSBuilds still connects (a watch it may not make would keep the source
// reconnecting for ever), and the source says which resource it leaves out.
func TestSourceWithoutBuildsAccess(t *testing.T) {
	ctx := kubetest.Context(t)
	read := []string{"get", "list", "watch"}
	role, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "no-builds-"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: read},
			{APIGroups: []string{"apps", "operator.openshift.io", "machine.openshift.io", "config.openshift.io"}, Resources: []string{"*"}, Verbs: read},
			{APIGroups: []string{mcfgv1.GroupName}, Resources: []string{"machineconfigpools", "machineconfigs", "machineconfignodes",
				"kubeletconfigs", "containerruntimeconfigs", "machineosconfigs", "osimagestreams"}, Verbs: read},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	user := "viewer@tsrcbuilds"
	binding, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "no-builds-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The authorizer reads the binding from its own informers: wait until it counts.
	cl, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(ctx, t, "the viewer may list MachineConfigPools", func(ctx context.Context) (bool, error) {
		_, err := cl.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	c := newCluster(t, cfg, Options{})
	if got := c.Info().Unreadable; len(got) != 1 || got[0] != "machineosbuilds" {
		t.Fatalf("Unreadable = %v, want [machineosbuilds]", got)
	}
}
