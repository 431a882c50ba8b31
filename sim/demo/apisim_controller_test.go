package demo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	ign3types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/sim/apisim"
)

// TestControllerRendersAndTargets runs mcotui's controller on apisim, as `mcotui demo`
// does: it takes the Lease, renders the worker pool's config, and hands the pool's node
// its desired config. It lives here, above both, so that platform's tests do not
// depend on the controller.
func TestControllerRendersAndTargets(t *testing.T) {
	ctx := kubetest.Context(t)
	srv, err := apisim.Start(ctx, apisim.Options{Namespaces: []string{install.Namespace}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := kube.NewClients(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	roleLabel := "node-role.kubernetes.io/worker"
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{roleLabel: ""}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "worker"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: ""}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ign := ign3types.Config{Ignition: ign3types.Ignition{Version: "3.5.0"}}
	mode, src := 0o644, "data:,hello"
	ign.Storage.Files = []ign3types.File{{Node: ign3types.Node{Path: "/etc/motd"},
		FileEmbedded1: ign3types.FileEmbedded1{Mode: &mode, Contents: ign3types.Resource{Source: &src}}}}
	raw, err := json.Marshal(ign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "00-worker-motd", Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "worker"}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(runCtx, controller.Config{Clients: c, Identity: "demo", Version: "test",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("controller.Run: %v", err)
		}
	}()

	var rendered string
	kubetest.Eventually(t, 30*time.Second, "the pool's rendered config", func() (bool, string) {
		p, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rendered = p.Spec.Configuration.Name
		return strings.HasPrefix(rendered, "rendered-worker-"), fmt.Sprintf("spec.configuration.name %q", rendered)
	})
	mc, err := c.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, rendered, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the rendered config the pool names: %v", err)
	}
	if !strings.Contains(string(mc.Spec.Config.Raw), "/etc/motd") {
		t.Fatalf("rendered config %s lacks the source's file: %s", rendered, mc.Spec.Config.Raw)
	}
	kubetest.Eventually(t, 30*time.Second, "the node's desired config", func() (bool, string) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, "worker-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Annotations[nodeanno.DesiredConfigKey] == rendered, fmt.Sprintf("annotations %v", n.Annotations)
	})
	holder, held, err := kube.LeaseHolder(ctx, c.Kube, install.Namespace, install.LeaseName, time.Now())
	if err != nil || !held || holder != "demo" {
		t.Fatalf("the controller's Lease: holder %q held %v (%v)", holder, held, err)
	}
}
