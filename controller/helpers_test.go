package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

func clients(t *testing.T) *kube.Clients {
	t.Helper()
	c, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// running is a controller started by startController.
type running struct {
	identity string
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run has returned, err set
	err      error
}

// stop cancels the controller and waits for Run to return, as a process killed with
// SIGTERM would.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("controller %s: %v", r.identity, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("controller %s did not stop within 30s of its context ending", r.identity)
	}
}

// startController runs a controller with quick leader election on a Lease of the
// test's own, and stops it when the test ends.
func startController(t *testing.T, lease, identity string, mutate ...func(*controller.Config)) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := controller.Config{
		Clients:       clients(t),
		Namespace:     leaseNamespace(t),
		LeaseName:     lease,
		Identity:      identity,
		LeaseDuration: 3 * time.Second,
		RenewDeadline: 2 * time.Second,
		RetryPeriod:   200 * time.Millisecond,
		Logger:        testLogger(t).With("controller", identity),
		Version:       "test",
	}
	for _, m := range mutate {
		m(&cfg)
	}
	r := &running{identity: identity, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = controller.Run(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Errorf("controller %s did not stop", identity)
		}
	})
	return r
}

var (
	leaseNSOnce sync.Once
	leaseNS     string
	leaseNSErr  error
)

func leaseNamespace(t *testing.T) string {
	t.Helper()
	leaseNSOnce.Do(func() { leaseNS, leaseNSErr = env.CreateNamespace(context.Background(), "mcotui-") })
	if leaseNSErr != nil {
		t.Fatal(leaseNSErr)
	}
	return leaseNS
}

// roleLabel is the node label that pool name selects.
func roleLabel(pool string) string { return "node-role.kubernetes.io/" + pool }

// createPool creates a custom pool named name that selects nodes by role label and
// MachineConfigs by the role label of MCO, and deletes it when the test ends.
func createPool(t *testing.T, name string, maxUnavailable *intstr.IntOrString, paused bool) *mcfgv1.MachineConfigPool {
	t.Helper()
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: name}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(name): ""}},
			MaxUnavailable:        maxUnavailable,
			Paused:                paused,
		},
	}
	created, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(kubetest.Context(t), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return created
}

// machineConfig is a MachineConfig of role that writes path with content.
func machineConfig(t testing.TB, name, role, path, content string) *mcfgv1.MachineConfig {
	t.Helper()
	return mctest.MachineConfig(t, name, mctest.Config{Role: role, Files: []mctest.File{{Path: path, Data: content, Mode: 0o644}}})
}

// applyMC creates the MachineConfig, or replaces the spec of the one of that name, and
// deletes it when the test ends.
func applyMC(t *testing.T, mc *mcfgv1.MachineConfig) {
	t.Helper()
	ctx := kubetest.Context(t)
	mcs := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	existing, err := mcs.Get(ctx, mc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := mcs.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create machineconfig %s: %v", mc.Name, err)
		}
		t.Cleanup(func() { _ = mcs.Delete(context.Background(), mc.Name, metav1.DeleteOptions{}) })
	case err != nil:
		t.Fatal(err)
	default:
		existing.Spec = mc.Spec
		if _, err := mcs.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update machineconfig %s: %v", mc.Name, err)
		}
	}
}

// expectedRendered renders pool over mcs as the controller should.
func expectedRendered(t *testing.T, pool *mcfgv1.MachineConfigPool, mcs ...*mcfgv1.MachineConfig) string {
	t.Helper()
	r, err := render.Render(pool, mcs)
	if err != nil {
		t.Fatal(err)
	}
	return r.Config.Name
}

// createNodes creates kwok nodes of pool named <pool>-<i>, in the zones given (one per
// node, "" for none), each Done at config current when it is not empty, and deletes
// them when the test ends. Nodes are created in order, a moment apart, so that their
// creation times (and so their rollout order within a zone) follow the index.
func createNodes(t *testing.T, pool string, current string, zones ...string) []string {
	t.Helper()
	ctx := kubetest.Context(t)
	var names []string
	for i, z := range zones {
		name := fmt.Sprintf("%s-%d", pool, i)
		labels := map[string]string{roleLabel(pool): ""}
		if z != "" {
			labels[corev1.LabelTopologyZone] = z
		}
		if _, err := env.CreateNode(ctx, name, labels); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		if current != "" {
			annotate(t, name, map[string]any{
				nodeanno.CurrentConfigKey: current, nodeanno.DesiredConfigKey: current, nodeanno.StateKey: nodeanno.StateDone,
			})
		}
		names = append(names, name)
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	}
	return names
}

func annotate(t *testing.T, node string, anns map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Nodes().Patch(kubetest.Context(t), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate node %s: %v", node, err)
	}
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func getPool(t *testing.T, name string) *mcfgv1.MachineConfigPool {
	t.Helper()
	p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(kubetest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func poolCondition(p *mcfgv1.MachineConfigPool, ct mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func condString(p *mcfgv1.MachineConfigPool) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s|%s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("counts machine=%d updated=%d ready=%d unavailable=%d degraded=%d; %s",
		p.Status.MachineCount, p.Status.UpdatedMachineCount, p.Status.ReadyMachineCount,
		p.Status.UnavailableMachineCount, p.Status.DegradedMachineCount, strings.Join(parts, " "))
}

// startFakeAgent plays the agent of pool's nodes until the test ends (see
// controllertest.FakeAgent); the nodes named in fail fail their updates.
func startFakeAgent(t *testing.T, pool string, work time.Duration, fail ...string) {
	t.Helper()
	a := &controllertest.FakeAgent{Kube: env.Kube, Selector: roleLabel(pool), Work: work, Fail: map[string]bool{}}
	for _, f := range fail {
		a.Fail[f] = true
	}
	a.Start(t)
}
