package cluster

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestStatusFeeds: against a real API server with the real CRDs, status lists the
// KubeletConfigs and ContainerRuntimeConfigs feeding a pool with their last
// condition, and with POOL only those that select it.
func TestStatusFeeds(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	api := env.MachineConfig.MachineconfigurationV1()
	pool, err := api.MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "feeds", Labels: map[string]string{"feeds": ""}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MachineConfigPools().Delete(context.Background(), pool.Name, metav1.DeleteOptions{}) })
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"feeds": ""}}
	kc, err := api.KubeletConfigs().Create(ctx, &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "feeds-kc"},
		Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: sel, KubeletConfig: &runtime.RawExtension{Raw: []byte(`{"clusterDomain":"x"}`)}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.KubeletConfigs().Delete(context.Background(), kc.Name, metav1.DeleteOptions{}) })
	kc.Status.Conditions = generated.KubeletConditions(nil, generated.Outcome{Err: errText("KubeletConfiguration: clusterDomain is not allowed to be set, but contains: x"), Reason: generated.ReasonInvalid}, metav1.Now())
	if _, err := api.KubeletConfigs().UpdateStatus(ctx, kc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := api.ContainerRuntimeConfigs().Create(ctx, &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "feeds-other"},
		Spec: mcfgv1.ContainerRuntimeConfigSpec{MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"elsewhere": ""}},
			ContainerRuntimeConfig: &mcfgv1.ContainerRuntimeConfiguration{LogLevel: "debug"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ContainerRuntimeConfigs().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})

	// The command itself, as a user runs it.
	code, got, stderr := runMcotui(t, env, "status", "feeds")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(got, "KIND") || !strings.Contains(got, "feeds-kc") || !strings.Contains(got, "False") ||
		!strings.Contains(got, "clusterDomain is not allowed") || strings.Contains(got, "feeds-other") {
		t.Errorf("status feeds:\n%s", got)
	}
	c, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	all, err := readFeeds(ctx, c, []*mcfgv1.MachineConfigPool{pool}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Errorf("without POOL: %+v", all)
	}
}

type errText string

func (e errText) Error() string { return string(e) }
