package controller_test

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// renderedWithImage creates the rendered config name of pool with osImageURL image.
func renderedWithImage(t *testing.T, name, pool, image string) {
	t.Helper()
	mc := machineConfig(t, name, pool, "/etc/stage", name)
	mc.Spec.OSImageURL = image
	applyMC(t, mc)
}

func setTarget(t *testing.T, pool, target string, annotations map[string]string) {
	t.Helper()
	p := getPool(t, pool)
	p.Spec.Configuration.Name = target
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(kubetest.Context(t), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The one rule every driver follows (the controller's Sync, `rollout --wait` and the
// TUI's drive all step through Driver): a node whose OS image the target changes is
// asked to stage it, a bounded number at a time, and is given the target only once its
// agent says it is staged.
func TestDriverStagesTheOSImageBeforeTargeting(t *testing.T) {
	ctx := kubetest.Context(t)
	two := intstr.FromInt(2)
	createPool(t, "stage", &two, false)
	renderedWithImage(t, "rendered-stage-old", "stage", "quay.io/os@sha256:01")
	renderedWithImage(t, "rendered-stage-new", "stage", "quay.io/os@sha256:02")
	nodes := createNodes(t, "stage", "rendered-stage-old", "", "", "")
	setTarget(t, "stage", "rendered-stage-new", map[string]string{rollout.StageParallelKey: "2"})
	d := controller.NewDriver(clients(t), controller.DriverOptions{})

	step, err := d.Step(ctx, "stage", rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Targets) != 0 || !slices.Equal(step.Stage, nodes[:2]) {
		t.Fatalf("first step: targets %v stage %v, want no targets and %v staging", step.Targets, step.Stage, nodes[:2])
	}
	for i, n := range nodes {
		node := getNode(t, n)
		want := ""
		if i < 2 {
			want = "quay.io/os@sha256:02"
		}
		if got := nodeanno.StageImage(node); got != want || nodeanno.Desired(node) != "rendered-stage-old" {
			t.Fatalf("node %s: stage-image %q desired %s, want %q and not targeted", n, got, nodeanno.Desired(node), want)
		}
	}
	// Nothing is staged yet: the next step asks no one else (two stage at once) and
	// targets no one.
	if step, err = d.Step(ctx, "stage", rollout.Options{}); err != nil || len(step.Targets)+len(step.Stage) != 0 {
		t.Fatalf("second step: %+v, %v", step, err)
	}
	if !strings.Contains(step.Wait, "staging the OS image quay.io/os@sha256:02 before the drain: 3 nodes to stage") {
		t.Fatalf("wait %q", step.Wait)
	}
	// The first node's agent staged it: it is targeted, and the third starts staging.
	annotate(t, nodes[0], map[string]any{nodeanno.StagedImageKey: "quay.io/os@sha256:02"})
	if step, err = d.Step(ctx, "stage", rollout.Options{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, nodes[:1]) || !slices.Equal(step.Stage, nodes[2:]) {
		t.Fatalf("third step: targets %v stage %v", step.Targets, step.Stage)
	}
	if d := nodeanno.Desired(getNode(t, nodes[0])); d != "rendered-stage-new" {
		t.Fatalf("staged node %s desires %s", nodes[0], d)
	}
}

func TestDriverWithoutStagingWhenThePoolOptsOut(t *testing.T) {
	ctx := kubetest.Context(t)
	createPool(t, "nostage", nil, false)
	renderedWithImage(t, "rendered-nostage-old", "nostage", "quay.io/os@sha256:01")
	renderedWithImage(t, "rendered-nostage-new", "nostage", "quay.io/os@sha256:02")
	nodes := createNodes(t, "nostage", "rendered-nostage-old", "")
	setTarget(t, "nostage", "rendered-nostage-new", map[string]string{rollout.StageKey: "false"})
	step, err := controller.NewDriver(clients(t), controller.DriverOptions{}).Step(ctx, "nostage", rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, nodes) || len(step.Stage) != 0 {
		t.Fatalf("targets %v stage %v: a pool that opts out is targeted at once", step.Targets, step.Stage)
	}
	if v := nodeanno.StageImage(getNode(t, nodes[0])); v != "" {
		t.Fatalf("node asked to stage %s", v)
	}
}
