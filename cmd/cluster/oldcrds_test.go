package cluster

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestCommandsOnCRDsOf2025: status (plain and wide), bootimages and validate of the
// cluster's pools work against an API server serving the Default CRDs of openshift/api
// of 2025-10 (testdata/crds-2025-10): no OSImageStream, no spec.osImageStream, no
// irreconcilableChanges. What the schema lacks is absent from the output, not an error.
func TestCommandsOnCRDsOf2025(t *testing.T) {
	crds, err := kubetest.CRDsIn("testdata/crds-2025-10")
	if err != nil {
		t.Fatal(err)
	}
	ctx := kubetest.Context(t)
	old, err := kubetest.StartWithCRDs(ctx, crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := old.Stop(); err != nil {
			t.Errorf("stop the 2025-10 control plane: %v", err)
		}
	})
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "worker"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
			// Written by a 2026 client: the 2025 schema prunes it.
			OSImageStream: mcfgv1.OSImageStreamReference{Name: "rhel-10"},
		},
	}
	created, err := old.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.OSImageStream.Name != "" {
		t.Fatalf("the 2025-10 schema kept spec.osImageStream: the test's premise is wrong")
	}
	if _, err := old.CreateNode(ctx, "old-0", map[string]string{"node-role.kubernetes.io/worker": ""}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"status", "-o", "wide"}, {"bootimages"}} {
		code, out, errOut := runMcotui(t, old, args...)
		if code != 0 || !strings.Contains(out, "worker") && args[0] == "status" {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out+errOut, "osimagestreams") || strings.Contains(out+errOut, "the server could not find") {
			t.Errorf("%v names the missing resource as an error:\n%s%s", args, out, errOut)
		}
		t.Logf("%v:\n%s%s", args, out, errOut)
	}
}
