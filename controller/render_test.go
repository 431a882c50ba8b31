package controller_test

import (
	"encoding/json"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestRenderCreatesRenderedConfig: the rendered MachineConfig is created with the name
// core/render gives it, owned by the pool; the pool's spec.configuration names it and
// its sources in merge order; a change to a source makes a new rendered config and
// leaves the old one as it was.
func TestRenderCreatesRenderedConfig(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "render", nil, false)
	base := machineConfig(t, "00-render-base", "render", "/etc/base", "base")
	motd := machineConfig(t, "10-render-motd", "render", "/etc/motd", "hello")
	applyMC(t, base)
	applyMC(t, motd)
	startController(t, "lease-render", "render-a")

	want := expectedRendered(t, pool, base, motd)
	kubetest.Eventually(t, 30*time.Second, "pool points at its rendered config", func() (bool, string) {
		p := getPool(t, "render")
		return p.Spec.Configuration.Name == want, "spec.configuration.name=" + p.Spec.Configuration.Name + " want " + want
	})
	p := getPool(t, "render")
	var sources []string
	for _, s := range p.Spec.Configuration.Source {
		sources = append(sources, s.Kind+"/"+s.Name)
	}
	if got := strings.Join(sources, ","); got != "MachineConfig/00-render-base,MachineConfig/10-render-motd" {
		t.Errorf("sources = %s", got)
	}
	mcs := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	first, err := mcs.Get(ctx, want, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(first); ref == nil || ref.Kind != "MachineConfigPool" || ref.Name != "render" || ref.UID != pool.UID {
		t.Errorf("owner = %+v, want the pool", first.OwnerReferences)
	}
	if first.Annotations[render.GeneratedByAnnotation] != "test" {
		t.Errorf("annotations = %v", first.Annotations)
	}
	// The render loop points the pool at its config, then writes RenderDegraded in a
	// second write (the status): wait for that one too.
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded False", func() (bool, string) {
		c := poolCondition(getPool(t, "render"), mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionFalse, fmt.Sprintf("RenderDegraded = %+v", c)
	})

	// A new source version: a new rendered config; the first one is not touched.
	motd2 := machineConfig(t, "10-render-motd", "render", "/etc/motd", "hello-again")
	applyMC(t, motd2)
	next := expectedRendered(t, pool, base, motd2)
	kubetest.Eventually(t, 30*time.Second, "pool points at the new rendered config", func() (bool, string) {
		p := getPool(t, "render")
		return p.Spec.Configuration.Name == next, "spec.configuration.name=" + p.Spec.Configuration.Name
	})
	again, err := mcs.Get(ctx, want, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the first rendered config is gone: %v", err)
	}
	if again.ResourceVersion != first.ResourceVersion || again.Generation != first.Generation {
		t.Errorf("the first rendered config was modified: resourceVersion %s -> %s", first.ResourceVersion, again.ResourceVersion)
	}

	// A deleted rendered config comes back: its name says what it holds.
	if err := mcs.Delete(ctx, next, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the deleted rendered config is created again", func() (bool, string) {
		_, err := mcs.Get(ctx, next, metav1.GetOptions{})
		return err == nil, "get: " + errString(err)
	})
}

// TestRenderDegradedWhenNothingMatches: a pool whose selector matches no MachineConfig
// is RenderDegraded and Degraded with core/render's reason, and recovers once one
// matches.
func TestRenderDegradedWhenNothingMatches(t *testing.T) {
	createPool(t, "empty", nil, false)
	startController(t, "lease-empty", "empty-a")

	kubetest.Eventually(t, 30*time.Second, "RenderDegraded", func() (bool, string) {
		p := getPool(t, "empty")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		d := poolCondition(p, mcfgv1.MachineConfigPoolDegraded)
		ok := c != nil && c.Status == corev1.ConditionTrue && d != nil && d.Status == corev1.ConditionTrue &&
			c.Message == `Failed to render configuration for pool empty: pool "empty": machineConfigSelector matches no MachineConfig (it selects machineconfiguration.openshift.io/role=empty); add a MachineConfig with that label`
		return ok, condString(p)
	})
	out, err := env.KubectlCommand(kubetest.Context(t), "get", "mcp", "empty", "--no-headers", "-o", "custom-columns=DEGRADED:.status.conditions[?(@.type==\"Degraded\")].status").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Errorf("kubectl get mcp empty: DEGRADED %q (%v)", out, err)
	}

	applyMC(t, machineConfig(t, "00-empty", "empty", "/etc/x", "x"))
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded cleared", func() (bool, string) {
		p := getPool(t, "empty")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		d := poolCondition(p, mcfgv1.MachineConfigPoolDegraded)
		return p.Spec.Configuration.Name != "" && c != nil && c.Status == corev1.ConditionFalse && d != nil && d.Status == corev1.ConditionFalse, condString(p)
	})
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	return err.Error()
}

func setPin(t *testing.T, pool string, to, from any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		rollout.RollbackToAnnotation: to, rollout.RollbackFromAnnotation: from,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(kubetest.Context(t), pool, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRollbackPin: the rollback annotations take a pool back to its previous rendered
// config and keep it there (the render loop does not roll it forward again), until
// they are removed; and a pin ends by itself, annotations removed, once the pool's
// MachineConfigs change.
func TestRollbackPin(t *testing.T) {
	pool := createPool(t, "pin", nil, false)
	v1 := machineConfig(t, "00-pin", "pin", "/etc/pin", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "pin", old, "", "")
	startFakeAgent(t, "pin", 100*time.Millisecond)
	reg := prometheus.NewRegistry()
	startController(t, "lease-pin", "pin-a", withMetrics(reg))
	waitRolledOut(t, "pin", old, nodes, 30*time.Second)
	v2 := machineConfig(t, "00-pin", "pin", "/etc/pin", "v2")
	cur := expectedRendered(t, pool, v2)
	applyMC(t, v2)
	waitRolledOut(t, "pin", cur, nodes, 30*time.Second)

	setPin(t, "pin", old, cur)
	waitRolledOut(t, "pin", old, nodes, 30*time.Second)
	// One more render of every pool (a MachineConfig no pool selects changed), after
	// which a wrong roll forward would be there to see.
	settle(t, reg, "render", func() { applyMC(t, machineConfig(t, "99-pin-poke", "pin-poke-none", "/etc/poke", time.Now().String())) })
	if p := getPool(t, "pin"); p.Spec.Configuration.Name != old {
		t.Fatalf("pinned pool: spec.configuration %s, want %s", p.Spec.Configuration.Name, old)
	}

	setPin(t, "pin", nil, nil)
	waitRolledOut(t, "pin", cur, nodes, 30*time.Second)

	setPin(t, "pin", old, cur)
	waitRolledOut(t, "pin", old, nodes, 30*time.Second)
	v3 := machineConfig(t, "00-pin", "pin", "/etc/pin", "v3")
	next := expectedRendered(t, pool, v3)
	applyMC(t, v3)
	waitRolledOut(t, "pin", next, nodes, 30*time.Second)
	if p := getPool(t, "pin"); p.Annotations[rollout.RollbackToAnnotation] != "" || p.Annotations[rollout.RollbackFromAnnotation] != "" {
		t.Errorf("the stale pin's annotations remain: %v", p.Annotations)
	}

	// A pin to a config that does not exist is refused once and removed, not warned
	// about at every sync.
	setPin(t, "pin", "rendered-pin-gone", next)
	ctx := kubetest.Context(t)
	for p := getPool(t, "pin"); p.Annotations[rollout.RollbackToAnnotation] != ""; p = getPool(t, "pin") {
		if ctx.Err() != nil {
			t.Fatalf("a pin to a missing config was never removed: %v", p.Annotations)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p := getPool(t, "pin"); p.Spec.Configuration.Name != next {
		t.Fatalf("after a pin to a missing config: spec.configuration %s, want %s", p.Spec.Configuration.Name, next)
	}
}

// TestRenderTooLargeDegraded: MachineConfigs each of which the API server stores, but
// whose rendered config it would not, make the pool RenderDegraded naming the largest;
// the controller had logged it and stopped, the pool with no condition and no Event.
func TestRenderTooLargeDegraded(t *testing.T) {
	createPool(t, "huge", nil, false)
	rnd := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789abcdef"[rnd.IntN(16)]
		}
		return string(b)
	}
	for _, name := range []string{"10-huge-a", "20-huge-b", "30-huge-c", "40-huge-d"} {
		applyMC(t, machineConfig(t, name, "huge", "/etc/"+name, noise(450<<10)))
	}
	startController(t, "lease-huge", "huge-a")
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded naming the largest sources", func() (bool, string) {
		p := getPool(t, "huge")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "more than the 1.50 MiB the API server stores in one object") &&
			strings.Contains(c.Message, "the largest contributors are "), condString(p)
	})
}
