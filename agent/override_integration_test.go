package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// On the real API server with install's CRDs: MachineConfiguration
// spec.irreconcilableValidationOverrides.storage [Disks] lets a disks change through;
// the node takes the rest of the config without touching its disks and reports the
// difference in its MachineConfigNode's status.irreconcilableChanges, which the CRD
// keeps (the Default CRD of OpenShift before 2026 would drop both fields).
func TestIntegrationDisksOverrideReportedInMachineConfigNode(t *testing.T) {
	n := newLiveNode(t, "it-disks", nil, false)
	ctx := kubetest.Context(t)
	pools, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disks := ownedBy(withDisks(t, configB(t), "rendered-worker-disks"), pools)
	// Already there when the test runs again (-count) on the same API server.
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, disks, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %s: %v", disks.Name, err)
	}
	// Every integration test shares MachineConfiguration cluster; the override only
	// matters to layout changes, which no other test makes.
	patch := []byte(`{"spec":{"irreconcilableValidationOverrides":{"storage":["Disks"]}}}`)
	mcfg, err := env.Operator.OperatorV1().MachineConfigurations().Patch(ctx, "cluster", types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mcfg.Spec.IrreconcilableValidationOverrides.Storage; len(got) != 1 {
		t.Fatalf("the API server kept overrides %v: does the MachineConfiguration CRD predate irreconcilableValidationOverrides?", got)
	}

	n.start()
	n.setDesired(disks.Name)
	n.await("Done on the disks config", doneOn(disks.Name))
	if ms := n.h.mismatches(t, configB(t)); len(ms) > 0 {
		t.Fatalf("host differs from B: %s", describeMismatches(ms))
	}
	var got []mcfgv1.IrreconcilableChangeDiff
	kubetest.Eventually(t, time.Minute, "irreconcilableChanges in the MachineConfigNode", func() (bool, string) {
		mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = mcn.Status.IrreconcilableChanges
		b, _ := json.Marshal(got)
		return len(got) > 0, string(b)
	})
	if len(got) != 1 || got[0].FieldPath != "spec.config.storage.disks[0]" || !strings.Contains(got[0].Diff, `"device":"/dev/vdb"`) {
		t.Fatalf("irreconcilableChanges = %+v", got)
	}
	if n.h.logind.Reboots() != 0 {
		t.Fatalf("%d reboots: a disks change alone is no change the node makes", n.h.logind.Reboots())
	}
}
