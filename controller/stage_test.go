package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
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
	for _, n := range nodes { // their agents stage, and say so
		annotate(t, n, map[string]any{nodeanno.AgentCapabilitiesKey: nodeanno.CapabilityStageOSImage})
	}
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

// A node whose agent is too old to stage (a fake agent that applies configs but
// ignores the stage request and publishes no capability) is asked to stage once, then
// targeted without staging, with a Warning Event on the pool naming it; the pool's
// OSImageStaging condition names it too. A node of an agent that stages still waits.
func TestDriverTargetsUnstagedWhenTheAgentDoesNotStage(t *testing.T) {
	ctx := kubetest.Context(t)
	two := intstr.FromInt(2)
	createPool(t, "oldagent", &two, false)
	renderedWithImage(t, "rendered-oldagent-old", "oldagent", "quay.io/os@sha256:01")
	renderedWithImage(t, "rendered-oldagent-new", "oldagent", "quay.io/os@sha256:02")
	nodes := createNodes(t, "oldagent", "rendered-oldagent-old", "", "")
	(&controllertest.FakeAgent{Kube: env.Kube, Selector: roleLabel("oldagent"), Work: 10 * time.Millisecond, Old: true}).Start(t)
	// The second node's agent stages (it says so) but has not staged yet.
	annotate(t, nodes[1], map[string]any{nodeanno.AgentCapabilitiesKey: nodeanno.CapabilityStageOSImage})
	setTarget(t, "oldagent", "rendered-oldagent-new", nil)

	scheme := runtime.NewScheme()
	if err := mcfgv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	t.Cleanup(broadcaster.Shutdown)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Kube.CoreV1().Events("")})
	d := controller.NewDriver(clients(t), controller.DriverOptions{Recorder: broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "test"})})

	step, err := d.Step(ctx, "oldagent", rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Targets) != 0 || !slices.Equal(step.Stage, nodes) {
		t.Fatalf("first step: targets %v stage %v, want both asked first", step.Targets, step.Stage)
	}
	// The request is on both nodes now; the old agent answers nothing.
	if step, err = d.Step(ctx, "oldagent", rollout.Options{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, nodes[:1]) || !slices.Equal(step.Unstaged, nodes[:1]) {
		t.Fatalf("second step: targets %v unstaged %v, want %v targeted without staging", step.Targets, step.Unstaged, nodes[:1])
	}
	if got := nodeanno.Desired(getNode(t, nodes[1])); got != "rendered-oldagent-old" {
		t.Fatalf("the node whose agent stages was targeted (%s) before it staged", got)
	}
	kubetest.Eventually(t, 20*time.Second, "the old agent applies the target", func() (bool, string) {
		n := getNode(t, nodes[0])
		return nodeanno.Current(n) == "rendered-oldagent-new" && nodeanno.State(n) == nodeanno.StateDone, fmt.Sprint(n.Annotations)
	})
	kubetest.Eventually(t, 20*time.Second, "an OSImageNotStaged event naming "+nodes[0], func() (bool, string) {
		evs, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=oldagent,reason=OSImageNotStaged"})
		if err != nil || len(evs.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		m := evs.Items[0].Message
		return evs.Items[0].Type == corev1.EventTypeWarning && strings.Contains(m, "Node "+nodes[0]+" is targeted without staging the OS image quay.io/os@sha256:02"), m
	})
	var nodeObjs []*corev1.Node
	for _, n := range nodes {
		nodeObjs = append(nodeObjs, getNode(t, n))
	}
	st := rollout.Status(getPool(t, "oldagent"), nodeObjs, metav1.Now())
	c := rollout.FindCondition(&st, rollout.OSImageStaging)
	if c == nil || !strings.Contains(c.Message, "targeted without staging, as their agent does not stage OS images (no mcotui.io/agent-capabilities=stage-os-image): "+nodes[0]) {
		t.Fatalf("OSImageStaging = %+v", c)
	}
}
