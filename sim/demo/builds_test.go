package demo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/sim/demo"
)

// TestImageBuilds plays the demo's builds on the real API server with the 2026 CRDs
// (their schemas and CEL rules check every write): one pool's build progresses to
// Succeeded and its MachineOSConfig then names the image; the other's fails; the
// rebuild annotation, as the TUI's r writes it, makes the failed build again, which
// succeeds, and the annotation is removed once it is done.
func TestImageBuilds(t *testing.T) {
	ctx := kubetest.Context(t)
	c, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mc := c.MachineConfig.MachineconfigurationV1()
	b := demo.NewImageBuilds(c, true, 1)
	b.Failing = "tb-fail"
	t0 := time.Now().Truncate(time.Second)
	if err := b.Seed(ctx, t0, map[string]string{"tb-ok": "rendered-tb-ok-1", "tb-fail": "rendered-tb-fail-1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"tb-ok", "tb-fail"} {
			_ = mc.MachineOSConfigs().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
		for _, n := range []string{b.BuildName("tb-ok", "rendered-tb-ok-1"), b.BuildName("tb-ok", "rendered-tb-ok-3"), b.BuildName("tb-fail", "rendered-tb-fail-1")} {
			_ = mc.MachineOSBuilds().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	ok, bad := b.BuildName("tb-ok", "rendered-tb-ok-1"), b.BuildName("tb-fail", "rendered-tb-fail-1")
	if h := strings.TrimPrefix(ok, "tb-ok-"); len(h) != 32 {
		t.Errorf("build name %s: want MCO's form, the MachineOSConfig's name and 32 hex digits", ok)
	}
	get := func(name string) *mcfgv1.MachineOSBuild {
		t.Helper()
		m, err := mc.MachineOSBuilds().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	state := func(name string) imagemode.State { t.Helper(); return imagemode.BuildState(get(name)) }
	step := func(at time.Duration) {
		t.Helper()
		if err := b.Step(ctx, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	if s1, s2 := state(ok), state(bad); s1 != imagemode.Prepared || s2 != imagemode.Prepared {
		t.Fatalf("seeded: %s %s, %s %s; want both Prepared", ok, s1, bad, s2)
	}
	step(demo.BuildQueued)
	if s1, s2 := state(ok), state(bad); s1 != imagemode.Building || s2 != imagemode.Building {
		t.Fatalf("after %s: %s, %s; want both Building", demo.BuildQueued, s1, s2)
	}
	step(demo.BuildQueued + demo.FailDuration)
	if s1, s2 := state(ok), state(bad); s1 != imagemode.Building || s2 != imagemode.Failed {
		t.Fatalf("after %s: %s, %s; want Building, Failed", demo.BuildQueued+demo.FailDuration, s1, s2)
	}
	if why := imagemode.Why(get(bad)); !strings.Contains(why, "Build Failed") {
		t.Errorf("the failed build says %q", why)
	}
	step(demo.BuildQueued + demo.BuildDuration)
	done := get(ok)
	if imagemode.BuildState(done) != imagemode.Succeeded || done.Status.BuildStart == nil || done.Status.BuildEnd == nil ||
		done.Status.BuildEnd.Sub(done.Status.BuildStart.Time) != demo.BuildDuration || done.Status.DigestedImagePushSpec == "" {
		t.Fatalf("%s: %+v; want Succeeded after %s with an image", ok, done.Status, demo.BuildDuration)
	}
	if m, err := mc.MachineOSConfigs().Get(ctx, "tb-ok", metav1.GetOptions{}); err != nil || m.Status.CurrentImagePullSpec != done.Status.DigestedImagePushSpec ||
		m.Annotations[imagemode.CurrentBuildAnnotation] != ok {
		t.Fatalf("MachineOSConfig tb-ok: %v %+v %v; want its image %s and current build %s", err, m.Status, m.Annotations, done.Status.DigestedImagePushSpec, ok)
	}

	// r in the builds view.
	failed := get(bad)
	if err := kube.RequestRebuild(ctx, c, "tb-fail", "test"); err != nil {
		t.Fatal(err)
	}
	at := demo.BuildQueued + demo.BuildDuration + time.Second
	step(at)
	again := get(bad)
	if again.UID == failed.UID || imagemode.BuildState(again) != imagemode.Prepared {
		t.Fatalf("after the rebuild annotation: %s is %s (uid %s, was %s); want made again, Prepared", bad, imagemode.BuildState(again), again.UID, failed.UID)
	}
	if m, _ := mc.MachineOSConfigs().Get(ctx, "tb-fail", metav1.GetOptions{}); !imagemode.RebuildPending(m) {
		t.Error("the rebuild annotation is gone before the build is done; MCO removes it once it is")
	}
	step(at + demo.BuildQueued + demo.BuildDuration)
	if s := state(bad); s != imagemode.Succeeded {
		t.Fatalf("the rebuilt %s: %s, want Succeeded", bad, s)
	}
	if m, _ := mc.MachineOSConfigs().Get(ctx, "tb-fail", metav1.GetOptions{}); imagemode.RebuildPending(m) {
		t.Error("the rebuild annotation stays after the rebuild is done")
	}

	// The pool renders a new config, then another before its build ends: each is
	// built; the superseded running build is deleted (MCO's startBuild), the
	// succeeded one kept.
	pools := mc.MachineConfigPools()
	pool, err := pools.Create(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "tb-ok"},
		Spec: mcfgv1.MachineConfigPoolSpec{Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: "rendered-tb-ok-2"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Delete(context.Background(), "tb-ok", metav1.DeleteOptions{}) })
	at += demo.BuildQueued + demo.BuildDuration
	step(at)
	second := b.BuildName("tb-ok", "rendered-tb-ok-2")
	if s := state(second); s != imagemode.Prepared {
		t.Fatalf("the build of the pool's new config %s: %s, want Prepared", second, s)
	}
	pool.Spec.Configuration.Name = "rendered-tb-ok-3"
	if _, err := pools.Update(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step(at + time.Second)
	third := b.BuildName("tb-ok", "rendered-tb-ok-3")
	list, err := mc.MachineOSBuilds().List(ctx, metav1.ListOptions{LabelSelector: "machineconfiguration.openshift.io/machine-os-config=tb-ok"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Items {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	want := []string{ok, third}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tb-ok's builds: %v, want %v (the superseded %s deleted)", names, want, second)
	}
	if m, _ := mc.MachineOSConfigs().Get(ctx, "tb-ok", metav1.GetOptions{}); m.Annotations[imagemode.CurrentBuildAnnotation] != third {
		t.Errorf("tb-ok's current build: %q, want %s", m.Annotations[imagemode.CurrentBuildAnnotation], third)
	}
}
