package nodeagent

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestTargetNode: a target is the node's desiredConfig annotation alone, as MCO's node
// controller writes it; a decision made on an outdated node is refused. The
// MachineConfigNode is the agent's: its next report brings the spec to the new desired
// config (creating the object the first time), its conditions kept, as MCO's daemon does.
func TestTargetNode(t *testing.T) {
	ctx := kubetest.Context(t)
	c, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mcns := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	getMCN := func() *mcfgv1.MachineConfigNode {
		t.Helper()
		mcn, err := mcns.Get(ctx, "target-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return mcn
	}
	node := kubetest.CreateBareNode(t, env.Kube, "target-0", map[string]string{"node-role.kubernetes.io/worker": ""}, nil)

	if err := kube.TargetNode(ctx, c, node, "rendered-worker-1", "test-controller"); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, "target-0")
	if nodeanno.Desired(n) != "rendered-worker-1" {
		t.Fatalf("desiredConfig = %q", nodeanno.Desired(n))
	}
	if _, err := mcns.Get(ctx, "target-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a target wrote a MachineConfigNode (err = %v): it is the agent's", err)
	}

	// node is now outdated: the target must be decided again.
	err = kube.TargetNode(ctx, c, node, "rendered-worker-2", "test-controller")
	if !apierrors.IsConflict(err) {
		t.Fatalf("target on an outdated node: err = %v, want a conflict", err)
	}
	if d := nodeanno.Desired(getNode(t, "target-0")); d != "rendered-worker-1" {
		t.Fatalf("desiredConfig = %q after a refused target", d)
	}

	// The agent's first report creates its MachineConfigNode, owned by the node.
	a := newAgent(t, "target-0", "worker", fast(t))
	if err := a.SetConditions(ctx, "rendered-worker-1", phase.UpToDate("target-0")); err != nil {
		t.Fatal(err)
	}
	mcn := getMCN()
	if mcn.Spec.ConfigVersion.Desired != "rendered-worker-1" || mcn.Spec.Pool.Name != "worker" || mcn.Spec.Node.Name != "target-0" ||
		len(mcn.OwnerReferences) != 1 || mcn.OwnerReferences[0].UID != node.UID {
		t.Fatalf("machineconfignode = %+v", mcn)
	}

	// A new target leaves the MachineConfigNode alone; the agent's report toward it
	// brings the spec in step and keeps the conditions it had.
	if err := kube.TargetNode(ctx, c, getNode(t, "target-0"), "rendered-worker-2", "test-controller"); err != nil {
		t.Fatal(err)
	}
	if got := getMCN(); got.ResourceVersion != mcn.ResourceVersion {
		t.Fatalf("a target wrote the MachineConfigNode: spec %+v", got.Spec)
	}
	if err := a.SetConditions(ctx, "rendered-worker-2", phase.Condition{Type: mcfgv1.MachineConfigNodeUpdatePrepared, Status: metav1.ConditionUnknown, Reason: "Prepare", Message: "preparing"}); err != nil {
		t.Fatal(err)
	}
	if mcn = getMCN(); mcn.Spec.ConfigVersion.Desired != "rendered-worker-2" || len(mcn.Status.Conditions) == 0 {
		t.Fatalf("machineconfignode after the agent's report: spec %+v, %d conditions", mcn.Spec, len(mcn.Status.Conditions))
	}
}
