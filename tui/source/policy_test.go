package source

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
)

// TestStepRefusedOutsideWindow: the TUI's step plans under the pool's rollout policy as
// the controller does. A pool whose maintenance window is closed gets no target from
// the TUI, with the window named; once the window is open the same step targets the
// node.
func TestStepRefusedOutsideWindow(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "twindow", 1, 1)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{policy.WindowsKey: "Sat 22:00-Sun 04:00 UTC"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate pool %s: %v", p.Name, err)
	}
	// The source reads its clock on its own goroutines too (Health.Since).
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixNano()) // a Wednesday noon: closed
	c := newCluster(t, env.Config, Options{Now: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	cached(ctx, t, c, p.Name, func(mp *mcfgv1.MachineConfigPool) bool {
		return mp.Annotations[policy.WindowsKey] != ""
	})
	a := NewActions(c, "test")

	_, err = a.Rollout(ctx, p.Name, []string{p.AtOld[0]})
	if err == nil || !strings.Contains(err.Error(), "outside the maintenance windows") {
		t.Fatalf("a step outside the window: err = %v, want it refused as outside the maintenance windows", err)
	}
	n, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtOld[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeanno.Desired(n); got != p.Old {
		t.Fatalf("node %s desiredConfig = %q after a refused step, want %q unchanged", n.Name, got, p.Old)
	}

	now.Store(time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC).UnixNano()) // Saturday 23:00: open
	if _, err := a.Rollout(ctx, p.Name, []string{p.AtOld[0]}); err != nil {
		t.Fatalf("a step inside the window: %v", err)
	}
	clustertest.Eventually(ctx, t, "the node at the old config targeted", func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtOld[0], metav1.GetOptions{})
		return err == nil && nodeanno.Desired(n) == p.New, err
	})
}

// TestStepUnderPoolOrderAndHooks: the TUI's step obeys what the controller's sync
// obeys, through the same kube.PolicyOptions: a pool that waits for another pool not
// updated (here one that does not exist) gets no target, saying so; a pool with hooks
// is not stepped by hand (the hooks run where the rollout is driven); with neither,
// the same step targets the node.
func TestStepUnderPoolOrderAndHooks(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tseq", 1, 1)
	annotate := func(anns map[string]any) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("annotate pool %s: %v", p.Name, err)
		}
	}
	annotate(map[string]any{policy.WaitForPoolsKey: "tseq-canary"})
	c := newCluster(t, env.Config, Options{})
	cached(ctx, t, c, p.Name, func(mp *mcfgv1.MachineConfigPool) bool { return mp.Annotations[policy.WaitForPoolsKey] != "" })
	a := NewActions(c, "test")
	_, err := a.Rollout(ctx, p.Name, []string{p.AtOld[0]})
	if err == nil || !strings.Contains(err.Error(), "waiting for pool tseq-canary (mcotui.io/wait-for-pools), which does not exist") {
		t.Fatalf("a step of a pool waiting for another: err = %v, want it refused as waiting for pool tseq-canary", err)
	}

	annotate(map[string]any{policy.WaitForPoolsKey: nil, policy.HookKey(policy.BeforeDrain): "hooks/drain-check"})
	cached(ctx, t, c, p.Name, func(mp *mcfgv1.MachineConfigPool) bool { return mp.Annotations[policy.WaitForPoolsKey] == "" })
	_, err = a.Rollout(ctx, p.Name, []string{p.AtOld[0]})
	if err == nil || !strings.Contains(err.Error(), "it has hooks") {
		t.Fatalf("a step of a pool with hooks: err = %v, want it refused", err)
	}
	n, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtOld[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeanno.Desired(n); got != p.Old {
		t.Fatalf("node %s desiredConfig = %q after refused steps, want %q unchanged", n.Name, got, p.Old)
	}

	annotate(map[string]any{policy.HookKey(policy.BeforeDrain): nil})
	cached(ctx, t, c, p.Name, func(mp *mcfgv1.MachineConfigPool) bool {
		return len(mp.Annotations) == 0 || mp.Annotations[policy.HookKey(policy.BeforeDrain)] == ""
	})
	if _, err := a.Rollout(ctx, p.Name, []string{p.AtOld[0]}); err != nil {
		t.Fatalf("a step with no order and no hooks: %v", err)
	}
	clustertest.Eventually(ctx, t, "the node at the old config targeted", func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtOld[0], metav1.GetOptions{})
		return err == nil && nodeanno.Desired(n) == p.New, err
	})
}
