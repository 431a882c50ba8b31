// Package controllertest holds test doubles for the tests of the controller and of the
// commands that drive it. Nothing here runs in production.
package controllertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
)

// FakeAgent is a test double of mcotui's agent, for the controller's tests until the
// real agent runs in end-to-end tests (it is tested on its own in package agent). For
// every node matching its label selector whose desiredConfig differs from its
// currentConfig, it writes state Working, waits Work, then writes currentConfig =
// desiredConfig and state Done, as an agent does at the end of an update. A node named
// in Fail reports state Degraded with reason "boom" instead, and is left alone until
// its desired config changes. It follows its nodes as InstantAgent does
// (kube.NodeWorkers), one worker a node.
//
// A node asked to stage an OS image before its drain (nodeanno.StageImageKey) is said
// to have staged it at once (nodeanno.StagedImageKey), as an agent says once its
// download ends. Like the agent, it says so on each node
// (nodeanno.AgentCapabilitiesKey): Start does it for the nodes that exist before it
// returns, the workers for later ones. With Old it plays an agent too old to stage:
// it publishes no capability and ignores the request.
//
// It only writes the node annotations the controller reads; it neither cordons, drains
// nor writes MachineConfigNode conditions.
type FakeAgent struct {
	Kube     kubernetes.Interface
	Selector string // label selector of the nodes it plays the agent of
	Work     time.Duration
	Fail     map[string]bool
	Old      bool
}

// fakeAgentWorkers bounds the nodes a FakeAgent updates at once: more than any test's
// pool, so that each node's update starts as soon as it is targeted.
const fakeAgentWorkers = 64

// Start runs the fake agent until the test ends.
func (a *FakeAgent) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &kube.NodeWorkers{Kube: a.Kube, Selector: a.Selector, Workers: fakeAgentWorkers, Pending: a.pending,
		Work: func(ctx context.Context, n *corev1.Node) error {
			if !a.Old && !nodeanno.HasCapability(n, nodeanno.CapabilityStageOSImage) {
				a.annotate(ctx, n.Name, map[string]string{nodeanno.AgentCapabilitiesKey: nodeanno.CapabilityStageOSImage})
			}
			if nodeanno.Staging(n) && !a.Old {
				a.stage(ctx, n.Name, nodeanno.StageImage(n))
			}
			if a.needsUpdate(n) {
				a.update(ctx, n.Name, nodeanno.Desired(n))
			}
			return nil
		}}
	wait, err := w.Start(ctx)
	if err != nil {
		cancel()
		t.Fatalf("fake agent: %v", err)
	}
	if !a.Old {
		// As an agent's first sync does, before any rollout the test starts next.
		nodes, err := a.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: a.Selector})
		if err != nil {
			cancel()
			wait()
			t.Fatalf("fake agent: list nodes: %v", err)
		}
		for _, n := range nodes.Items {
			if !nodeanno.HasCapability(&n, nodeanno.CapabilityStageOSImage) {
				a.annotate(ctx, n.Name, map[string]string{nodeanno.AgentCapabilitiesKey: nodeanno.CapabilityStageOSImage})
			}
		}
	}
	t.Cleanup(func() {
		cancel()
		wait()
	})
}

// pending: the node has an OS image to stage, does not yet say its agent stages, or
// needs an update.
func (a *FakeAgent) pending(n *corev1.Node) bool {
	if !a.Old && (nodeanno.Staging(n) || !nodeanno.HasCapability(n, nodeanno.CapabilityStageOSImage)) {
		return true
	}
	return a.needsUpdate(n)
}

// needsUpdate: the node has a desired config it does not run and has not failed.
func (a *FakeAgent) needsUpdate(n *corev1.Node) bool {
	cur, des, st := nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n)
	failed := a.Fail[n.Name] && st == nodeanno.StateDegraded
	return des != "" && (cur != des || st != nodeanno.StateDone) && !failed
}

// stage says the node has staged img.
func (a *FakeAgent) stage(ctx context.Context, node, img string) {
	a.annotate(ctx, node, map[string]string{nodeanno.StagedImageKey: img})
}

// annotate merges anns into the node's annotations, best effort (the workers come back
// to a node still pending).
func (a *FakeAgent) annotate(ctx context.Context, node string, anns map[string]string) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err != nil {
		return
	}
	_, _ = a.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fake-agent"})
}

func (a *FakeAgent) update(ctx context.Context, node, desired string) {
	patch := func(anns map[string]any) error {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
		if err != nil {
			return err
		}
		_, err = a.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fake-agent"})
		return err
	}
	// The list that started this update may predate this agent's own Done write of an
	// update just finished (the loop lists while one runs): a node that no longer needs
	// the update must not be set Working again, which would make it unavailable as no
	// real agent does.
	n, err := a.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || nodeanno.Desired(n) != desired || (nodeanno.Current(n) == desired && nodeanno.State(n) == nodeanno.StateDone) {
		return
	}
	if err := patch(map[string]any{nodeanno.StateKey: nodeanno.StateWorking}); err != nil {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(a.Work):
	}
	if a.Fail[node] {
		_ = patch(map[string]any{nodeanno.StateKey: nodeanno.StateDegraded, nodeanno.ReasonKey: "boom"})
		return
	}
	_ = patch(map[string]any{nodeanno.CurrentConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: nil})
}
