package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// startOldEnv starts a second control plane serving the Default CRDs of openshift/api
// of 2025-10 (testdata/crds-2025-10): a cluster from before OSStreams, irreconcilable
// changes in the Default MachineConfigNode, and ControlPlaneMachineSet boot images.
func startOldEnv(t *testing.T) *kubetest.Env {
	t.Helper()
	crds, err := kubetest.CRDsIn("../testdata/crds-2025-10")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kubetest.StartWithCRDs(kubetest.Context(t), crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop the 2025-10 control plane: %v", err)
		}
	})
	return e
}

// TestControllerOnCRDsOf2025: against an API server whose CRDs are a year older than
// the code's types (no OSImageStream CRD, no spec.osImageStream on pools), the
// controller starts, renders and rolls a pool out as before: the streams are off, not
// an error, and the pool's status is written without the fields the schema lacks.
func TestControllerOnCRDsOf2025(t *testing.T) {
	old := startOldEnv(t)
	ctx := kubetest.Context(t)
	if _, err := old.MachineConfig.MachineconfigurationV1().OSImageStreams().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the 2025-10 CRDs serve OSImageStreams: the test's premise is wrong")
	}
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "old"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel("old"): ""}},
		},
	}
	pool, err := old.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc := machineConfig(t, "00-old", "old", "/etc/old", "v1")
	if _, err := old.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := expectedRendered(t, pool, mc)
	var nodes []string
	for i := range 2 {
		name := fmt.Sprintf("old-%d", i)
		if _, err := old.CreateNode(ctx, name, map[string]string{roleLabel("old"): ""}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, name)
	}
	(&controllertest.FakeAgent{Kube: old.Kube, Selector: roleLabel("old"), Work: 100 * time.Millisecond}).Start(t)

	c, err := kube.NewClients(old.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := old.CreateNamespace(ctx, "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(runCtx, controller.Config{Clients: c, Namespace: ns, LeaseName: "lease-old", Identity: "old-a",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Logger: testLogger(t), Version: "test"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
	})

	kubetest.EventuallyProgress(t, 60*time.Second, "pool old rolled out to "+target+" on the 2025-10 CRDs", func() kubetest.Progress {
		var behind []string
		for _, name := range nodes {
			n, err := old.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return kubetest.Progress{State: err.Error()}
			}
			if nodeanno.Current(n) != target || nodeanno.State(n) != nodeanno.StateDone {
				behind = append(behind, name+"@"+nodeanno.Current(n))
			}
		}
		p, err := old.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "old", metav1.GetOptions{})
		if err != nil {
			return kubetest.Progress{State: err.Error()}
		}
		c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated)
		done := len(behind) == 0 && c != nil && c.Status == corev1.ConditionTrue && p.Status.Configuration.Name == target
		return kubetest.Progress{Done: done, Mark: fmt.Sprintf("%v %d/%d", behind, p.Status.UpdatedMachineCount, p.Status.MachineCount), State: fmt.Sprintf("behind %v; %s", behind, condString(p))}
	})
}
