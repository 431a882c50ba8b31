package rollout_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
)

const (
	oldImage = "quay.io/os@sha256:01"
	newImage = "quay.io/os@sha256:02"
)

func stageAnn(key, image string) nodeOpt {
	return func(n *nodeT) { n.Annotations[key] = image }
}

// canStage is a node whose agent stages OS images (it says so, as every such agent does).
func canStage(n *nodeT) {
	n.Annotations[nodeanno.AgentCapabilitiesKey] = nodeanno.CapabilityStageOSImage
}

func stageOf(parallel int) *rollout.Stage {
	return &rollout.Stage{Image: newImage, Images: map[string]string{oldCfg: oldImage, newCfg: newImage}, Parallel: parallel}
}

func TestStageGatesTargetsOnTheStagedImage(t *testing.T) {
	p := stagePool(3)
	nodes := []*nodeT{
		node("a", age(1), at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), stageAnn(nodeanno.StagedImageKey, newImage)),
		node("b", age(2), at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), canStage),
		node("c", age(3), at(oldCfg)),
		node("d", age(4), at(oldCfg)),
	}
	step, err := rollout.Plan(p, nodes, rollout.Options{Stage: stageOf(2)})
	if err != nil {
		t.Fatal(err)
	}
	// a is staged: targeted. b stages (one of the two slots), c takes the other; d waits.
	if !slices.Equal(step.Targets, []string{"a"}) {
		t.Fatalf("targets %v, want [a]: only staged nodes are targeted", step.Targets)
	}
	if !slices.Equal(step.Stage, []string{"c"}) || !slices.Equal(step.Staging, []string{"b", "c", "d"}) || step.StageImage != newImage {
		t.Fatalf("stage %v staging %v image %s", step.Stage, step.Staging, step.StageImage)
	}
	for _, sk := range step.Skipped {
		if sk.Node == "d" && (sk.Reason != rollout.SkipStaging || !strings.Contains(sk.Message, "waits its turn")) {
			t.Fatalf("d skipped %s: %s", sk.Reason, sk.Message)
		}
		if sk.Node == "b" && !strings.Contains(sk.Message, "staging the OS image") {
			t.Fatalf("b skipped %s: %s", sk.Reason, sk.Message)
		}
	}
}

func TestStageTakesNoCapacityAndStopsWhenPaused(t *testing.T) {
	p := stagePool(1)
	nodes := []*nodeT{
		node("a", age(1), updating(oldCfg, newCfg)),
		node("b", age(2), at(oldCfg)),
		node("c", age(3), at(oldCfg)),
	}
	step, err := rollout.Plan(p, nodes, rollout.Options{Stage: stageOf(5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Targets) != 0 || !slices.Equal(step.Stage, []string{"b", "c"}) {
		t.Fatalf("targets %v stage %v: staging goes on while maxUnavailable is used up", step.Targets, step.Stage)
	}
	p.Spec.Paused = true
	if step, _ = rollout.Plan(p, nodes, rollout.Options{Stage: stageOf(5)}); len(step.Stage) != 0 {
		t.Fatalf("a paused pool asked %v to stage", step.Stage)
	}
}

func TestStageSkipsNodesWhoseImageDoesNotChange(t *testing.T) {
	p := stagePool(2)
	st := stageOf(1)
	st.Image = oldImage // the target keeps the image
	step, err := rollout.Plan(p, []*nodeT{node("a", at(oldCfg)), node("b", at(oldCfg))}, rollout.Options{Stage: st})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, []string{"a", "b"}) || len(step.Staging) != 0 {
		t.Fatalf("targets %v staging %v", step.Targets, step.Staging)
	}
}

func TestStageOf(t *testing.T) {
	p := stagePool(1)
	if on, n, err := rollout.StageOf(p, 10); !on || n != 10 || err != nil {
		t.Fatalf("default: %t %d %v", on, n, err)
	}
	p.Annotations = map[string]string{rollout.StageParallelKey: "3"}
	if on, n, err := rollout.StageOf(p, 10); !on || n != 3 || err != nil {
		t.Fatalf("annotated: %t %d %v", on, n, err)
	}
	p.Annotations[rollout.StageKey] = "false"
	if on, _, err := rollout.StageOf(p, 10); on || err != nil {
		t.Fatalf("opted out: %t %v", on, err)
	}
	p.Annotations = map[string]string{rollout.StageParallelKey: "0"}
	if _, _, err := rollout.StageOf(p, 10); err == nil || !strings.Contains(err.Error(), "machineconfigpool worker: annotation mcotui.io/stage-parallelism=\"0\"") {
		t.Fatalf("bad parallelism: %v", err)
	}
	p.Annotations = map[string]string{rollout.StageParallelKey: "4"}
	p.Name = "master"
	if _, n, _ := rollout.StageOf(p, 10); n != 1 {
		t.Fatalf("control plane stages %d at once, want 1", n)
	}
}

func stagePool(maxUnavailable int) *poolT {
	p := &poolT{}
	p.Name = "worker"
	p.Spec.Configuration.Name = newCfg
	mu := intstr.FromInt(maxUnavailable)
	p.Spec.MaxUnavailable = &mu
	return p
}

func TestPoolStatusSaysWhoStages(t *testing.T) {
	p := stagePool(1)
	now := metav1.Now()
	st := rollout.Status(p, []*nodeT{node("a", at(oldCfg)), node("b", at(oldCfg))}, now)
	if c := rollout.FindCondition(&st, rollout.OSImageStaging); c != nil {
		t.Fatalf("a pool that never staged has %+v", c)
	}
	nodes := []*nodeT{
		node("a", at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), stageAnn(nodeanno.StagedImageKey, newImage)),
		node("b", at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), canStage),
	}
	st = rollout.Status(p, nodes, now)
	c := rollout.FindCondition(&st, rollout.OSImageStaging)
	if c == nil || c.Status != corev1.ConditionTrue || c.Message != "1 of 2 nodes asked have staged the OS image "+newImage+" before their drain; pulling: b" {
		t.Fatalf("OSImageStaging = %+v", c)
	}
	// The pool's status says how far each pulling node's download is, as its agent
	// reports it.
	progress := nodeanno.StageProgress{Image: newImage, Bytes: 300e6, TotalBytes: 1100e6, Layers: 3, TotalLayers: 51}
	nodes[1] = node("b", at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), canStage, stageAnn(nodeanno.StageProgressKey, progress.Value()))
	st = rollout.Status(p, nodes, now)
	if c := rollout.FindCondition(&st, rollout.OSImageStaging); c == nil || !strings.HasSuffix(c.Message, "; pulling: b ("+progress.String()+")") {
		t.Fatalf("OSImageStaging with b's progress = %+v", c)
	}
	p.Status = st
	st = rollout.Status(p, []*nodeT{node("a", at(newCfg)), node("b", at(newCfg))}, now)
	if c := rollout.FindCondition(&st, rollout.OSImageStaging); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("after the rollout OSImageStaging = %+v", c)
	}
}

// A node asked to stage whose agent is too old to (no capability published, no
// progress, nothing staged) is targeted without staging, once the request is on it,
// and the pool's condition names it; a node of a capable agent, or one that reports a
// download, still waits.
func TestStageFallsBackForAnAgentThatDoesNotStage(t *testing.T) {
	p := stagePool(3)
	progress := stageAnn(nodeanno.StageProgressKey, nodeanno.StageProgress{Image: newImage, Bytes: 1}.Value())
	nodes := []*nodeT{
		node("old", age(1), at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage)),
		node("new", age(2), at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), canStage),
		node("busy", age(3), at(oldCfg), stageAnn(nodeanno.StageImageKey, newImage), progress),
		node("fresh", age(4), at(oldCfg)),
	}
	step, err := rollout.Plan(p, nodes, rollout.Options{Stage: stageOf(5)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, []string{"old"}) || !slices.Equal(step.Unstaged, []string{"old"}) {
		t.Fatalf("targets %v unstaged %v, want [old]: only the old agent's node falls back", step.Targets, step.Unstaged)
	}
	// Not yet asked: asked first, whatever its agent (the request is the work to see unanswered).
	if !slices.Equal(step.Stage, []string{"fresh"}) || !slices.Equal(step.Staging, []string{"new", "busy", "fresh"}) {
		t.Fatalf("stage %v staging %v", step.Stage, step.Staging)
	}
	st := rollout.Status(p, nodes, metav1.Now())
	c := rollout.FindCondition(&st, rollout.OSImageStaging)
	if c == nil || !strings.Contains(c.Message, "pulling: busy (1 B), new; targeted without staging, as their agent does not stage OS images (no mcotui.io/agent-capabilities=stage-os-image): old") {
		t.Fatalf("OSImageStaging = %+v", c)
	}
}

func TestNodeStage(t *testing.T) {
	mcn := func(c phase.Condition) *mcfgv1.MachineConfigNode {
		m := &mcfgv1.MachineConfigNode{}
		m.Status.Conditions, _ = phase.Apply(nil, oldCfg, metav1.Now(), c)
		return m
	}
	asked := node("a", stageAnn(nodeanno.StageImageKey, newImage))
	staged := node("b", stageAnn(nodeanno.StageImageKey, newImage), stageAnn(nodeanno.StagedImageKey, newImage))
	for _, tc := range []struct {
		name  string
		n     *nodeT
		m     *mcfgv1.MachineConfigNode
		state rollout.StageState
		text  string
	}{
		{"not asked", node("c"), nil, rollout.StageNone, ""},
		{"asked", asked, mcn(phase.ImagePulling(newImage)), rollout.StagePulling, "pulling " + newImage},
		{"failing", asked, mcn(phase.ImagePullFailed(newImage, 2, errors.New("connection reset"))), rollout.StageRetrying,
			"Failed to pull OS image " + newImage + " (attempt 2, retrying; the node is not degraded): connection reset"},
		{"staged", staged, mcn(phase.ImageStaged(newImage, "2 layers, 10.0 MB")), rollout.StageStaged, "staged " + newImage + " (2 layers, 10.0 MB)"},
		{"staged, no MCN", staged, nil, rollout.StageStaged, "staged " + newImage},
		{"pulling with progress", node("d", stageAnn(nodeanno.StageImageKey, newImage),
			stageAnn(nodeanno.StageProgressKey, nodeanno.StageProgress{Image: newImage, Bytes: 300e6, TotalBytes: 1.1e9, Layers: 3, TotalLayers: 51}.Value())),
			mcn(phase.ImagePulling(newImage)), rollout.StagePulling, "pulling " + newImage + " (300.0 MB of 1.1 GB, 3 of 51 layers)"},
		{"progress of another image", node("e", stageAnn(nodeanno.StageImageKey, newImage),
			stageAnn(nodeanno.StageProgressKey, nodeanno.StageProgress{Image: "quay.io/other:1", Bytes: 1}.Value())),
			nil, rollout.StagePulling, "pulling " + newImage},
		{"progress that does not parse", node("f", stageAnn(nodeanno.StageImageKey, newImage), stageAnn(nodeanno.StageProgressKey, "{")),
			nil, rollout.StagePulling, "pulling " + newImage},
	} {
		st, text := rollout.NodeStage(tc.n, tc.m)
		if st != tc.state || text != tc.text {
			t.Errorf("%s: NodeStage = %d %q, want %d %q", tc.name, st, text, tc.state, tc.text)
		}
	}
}
