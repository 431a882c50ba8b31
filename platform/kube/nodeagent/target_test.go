package nodeagent

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestTargetNode: the desiredConfig annotation and the MachineConfigNode's desired
// config are written together; a decision made on an outdated node is refused.
func TestTargetNode(t *testing.T) {
	ctx := kubetest.Context(t)
	c, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	node := kubetest.CreateBareNode(t, env.Kube, "target-0", map[string]string{"node-role.kubernetes.io/worker": ""}, nil)

	if err := kube.TargetNode(ctx, c, node, nil, "worker", "rendered-worker-1", "test-controller"); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, "target-0")
	if nodeanno.Desired(n) != "rendered-worker-1" {
		t.Fatalf("desiredConfig = %q", nodeanno.Desired(n))
	}
	mcn, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "target-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mcn.Spec.ConfigVersion.Desired != "rendered-worker-1" || mcn.Spec.Pool.Name != "worker" || mcn.Spec.Node.Name != "target-0" ||
		len(mcn.OwnerReferences) != 1 || mcn.OwnerReferences[0].UID != node.UID {
		t.Fatalf("machineconfignode = %+v", mcn)
	}

	// node is now outdated: the target must be decided again.
	err = kube.TargetNode(ctx, c, node, nil, "worker", "rendered-worker-2", "test-controller")
	if !apierrors.IsConflict(err) {
		t.Fatalf("target on an outdated node: err = %v, want a conflict", err)
	}
	if d := nodeanno.Desired(getNode(t, "target-0")); d != "rendered-worker-1" {
		t.Fatalf("desiredConfig = %q after a refused target", d)
	}

	// The agent moves the MachineConfigNode on its own; the controller's next target
	// brings it in step, whatever its cache held.
	a := newAgent(t, "target-0", "worker", fast(t))
	if err := a.SetConditions(ctx, "rendered-worker-1", phase.UpToDate("target-0")); err != nil {
		t.Fatal(err)
	}
	if err := kube.TargetNode(ctx, c, getNode(t, "target-0"), nil, "worker", "rendered-worker-2", "test-controller"); err != nil {
		t.Fatal(err)
	}
	mcn, err = c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "target-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mcn.Spec.ConfigVersion.Desired != "rendered-worker-2" || len(mcn.Status.Conditions) == 0 {
		t.Fatalf("machineconfignode after retarget: spec %+v, %d conditions", mcn.Spec, len(mcn.Status.Conditions))
	}

	// A cached MachineConfigNode the agent has written since (stale resourceVersion):
	// the update conflicts, and the target still lands on a fresh read, with the
	// agent's conditions kept.
	stale := mcn.DeepCopy()
	if err := a.SetConditions(ctx, "rendered-worker-2", phase.UpToDate("target-0")); err != nil {
		t.Fatal(err)
	}
	if err := kube.TargetNode(ctx, c, getNode(t, "target-0"), stale, "worker", "rendered-worker-3", "test-controller"); err != nil {
		t.Fatalf("target with a stale cached MachineConfigNode: %v", err)
	}
	mcn, err = c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "target-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mcn.Spec.ConfigVersion.Desired != "rendered-worker-3" || len(mcn.Status.Conditions) == 0 {
		t.Fatalf("machineconfignode after a target from a stale cache: spec %+v, %d conditions", mcn.Spec, len(mcn.Status.Conditions))
	}

	// A node never targeted gets no MachineConfigNode: the schema requires a desired
	// config.
	fresh := kubetest.CreateBareNode(t, env.Kube, "target-1", nil, nil)
	if err := kube.SyncMachineConfigNode(ctx, c, fresh, "worker", nil, "test-controller"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, "target-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("machineconfignode of an untargeted node: err = %v, want not found", err)
	}
}
