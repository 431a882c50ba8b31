package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// These tests drive the real program over a real control plane: the keys a user would
// press, the confirmation, and then the object in the API server. The UI's tests in
// package tui cover the screens; these cover what the actions do.

// scope is the keys that show pool in the grid, which pool actions then act on.
func scope(pool string) []tea.Msg {
	return tuitest.Seq(tuitest.Typed(":pool "+pool), tuitest.Special(tea.KeyEnter))
}

// screen wraps the root model to keep the last screen it drew, so that a test reads
// the screen rather than the byte stream, where the renderer skips every cell that did
// not change (a notice "Pause pool x…" becoming "Paused pool x" sends only "d pool x").
type screen struct {
	*tui.UI
	mu   sync.Mutex
	last string
}

func (s *screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := s.UI.Update(msg)
	return s, cmd
}

func (s *screen) View() tea.View {
	v := s.UI.View()
	s.mu.Lock()
	s.last = tuitest.Plain(v.Content)
	s.mu.Unlock()
	return v
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// run is a program under test and its screen.
type run struct {
	*teatest.TestModel
	screen *screen
}

// program runs the TUI on a new subscription of c, with the cluster's actions unless
// readOnly, and quits it when the test ends.
func program(t *testing.T, c *Cluster, readOnly bool) *run {
	t.Helper()
	return programWith(t, c, tui.Options{Actions: NewActions(c, "test"), ReadOnly: readOnly, Refresh: -1})
}

// programWith runs the TUI with opts on a new subscription of c, and quits it when the
// test ends.
func programWith(t *testing.T, c *Cluster, opts tui.Options) *run {
	t.Helper()
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	ui := &screen{UI: tui.New(sub, opts)}
	tm := teatest.NewTestModel(t, ui, teatest.WithInitialTermSize(160, 50),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	t.Cleanup(func() {
		if err := tm.Quit(); err != nil {
			t.Error(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	})
	return &run{TestModel: tm, screen: ui}
}

func send(r *run, msgs []tea.Msg) {
	for _, m := range msgs {
		r.Send(m)
	}
}

// waitScreen waits until the screen shows text.
func waitScreen(t *testing.T, r *run, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.screen.text(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the screen does not show %q after 30s:\n%s", text, r.screen.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cached waits until the source's cache shows what cond checks on the pool, so that a
// program started next sees it in its snapshot: each step then starts from a screen
// that shows the previous step's outcome, as a user's would.
func cached(ctx context.Context, t *testing.T, c *Cluster, pool string, cond func(*mcfgv1.MachineConfigPool) bool) {
	t.Helper()
	clustertest.Eventually(ctx, t, "the cache of pool "+pool, func(context.Context) (bool, error) {
		p, err := c.pools.Get(pool)
		return err == nil && cond(p), nil
	})
}

// TestTUIActionsChangeTheCluster: pause, resume, maxUnavailable, the boot image mode
// and a rollback, each through its keys and its confirmation, change the object in the
// API server.
func TestTUIActionsChangeTheCluster(t *testing.T) {
	ctx := kubetest.Context(t)
	clustertest.SeedBootImages(ctx, t, env)
	p := clustertest.SeedPool(ctx, t, env, "tact", 2, 1)
	c := newCluster(t, env.Config, Options{Context: "test"})
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	nodes := env.Kube.CoreV1().Nodes()

	t.Run("pause", func(t *testing.T) {
		tm := program(t, c, false)
		send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("p")))
		waitScreen(t, tm, "spec.paused: false → true")
		send(tm, tuitest.Typed("y"))
		clustertest.Eventually(ctx, t, "pool paused", func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Spec.Paused, err
		})
		waitScreen(t, tm, "Paused pool "+p.Name)
	})
	t.Run("resume", func(t *testing.T) {
		cached(ctx, t, c, p.Name, func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Paused })
		tm := program(t, c, false)
		send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("p")))
		waitScreen(t, tm, "spec.paused: true → false")
		send(tm, tuitest.Typed("y"))
		clustertest.Eventually(ctx, t, "pool resumed", func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && !got.Spec.Paused, err
		})
	})
	t.Run("maxUnavailable", func(t *testing.T) {
		cached(ctx, t, c, p.Name, func(p *mcfgv1.MachineConfigPool) bool { return !p.Spec.Paused })
		tm := program(t, c, false)
		send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("m"), []tea.Msg{tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}}, tuitest.Typed("50%"), tuitest.Special(tea.KeyEnter)))
		waitScreen(t, tm, "spec.maxUnavailable: 1 → 50%")
		send(tm, tuitest.Typed("y"))
		clustertest.Eventually(ctx, t, "maxUnavailable 50%", func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Spec.MaxUnavailable != nil && got.Spec.MaxUnavailable.String() == "50%", err
		})
	})
	t.Run("boot image mode", func(t *testing.T) {
		tm := program(t, c, false)
		// Partial → All: tab from Partial wraps to All.
		send(tm, tuitest.Seq(tuitest.Typed("bm"), tuitest.Special(tea.KeyTab, tea.KeyEnter)))
		waitScreen(t, tm, "Partial (update-boot-image=true) → All")
		send(tm, tuitest.Typed("y"))
		clustertest.Eventually(ctx, t, "boot image mode All", func(ctx context.Context) (bool, error) {
			got, err := env.Operator.OperatorV1().MachineConfigurations().Get(ctx, "cluster", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			mm := got.Spec.ManagedBootImages.MachineManagers
			return len(mm) == 1 && mm[0].Selection.Mode == operatorv1.All && mm[0].Selection.Partial == nil, nil
		})
	})
	t.Run("rollback", func(t *testing.T) {
		// One node at the new config goes back: maxUnavailable 50% of 3 nodes is 1.
		cached(ctx, t, c, p.Name, func(p *mcfgv1.MachineConfigPool) bool {
			return p.Spec.MaxUnavailable != nil && p.Spec.MaxUnavailable.String() == "50%"
		})
		tm := program(t, c, false)
		send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("R")))
		waitScreen(t, tm, "Roll back pool "+p.Name)
		send(tm, tuitest.Typed("y"))
		// The pool is pinned to its previous config; the rollout (a controller, or D)
		// then takes the nodes back.
		clustertest.Eventually(ctx, t, "pool pinned to "+p.Old, func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Spec.Configuration.Name == p.Old &&
				got.Annotations[rollout.RollbackToAnnotation] == p.Old && got.Annotations[rollout.RollbackFromAnnotation] == p.New, err
		})
		waitScreen(t, tm, "Pool "+p.Name+" rolls back to "+p.Old)
		for _, name := range p.AtNew {
			n, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if nodeanno.Desired(n) != p.New {
				t.Errorf("node %s was targeted by the rollback itself: the rollout does that", name)
			}
		}
	})
	t.Run("remove the rollback pin", func(t *testing.T) {
		cached(ctx, t, c, p.Name, func(pool *mcfgv1.MachineConfigPool) bool {
			return pool.Annotations[rollout.RollbackToAnnotation] == p.Old
		})
		tm := program(t, c, false)
		send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("R")))
		waitScreen(t, tm, "Remove the rollback pin of pool "+p.Name)
		send(tm, tuitest.Typed("y"))
		// The annotations go; spec.configuration is the controller's render to move.
		clustertest.Eventually(ctx, t, "the pin removed", func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			_, to := got.Annotations[rollout.RollbackToAnnotation]
			_, from := got.Annotations[rollout.RollbackFromAnnotation]
			return err == nil && !to && !from && got.Spec.Configuration.Name == p.Old, err
		})
		waitScreen(t, tm, "Removed the rollback pin of pool "+p.Name)
	})
}

// TestTUIRolloutStep: the preview's enter, confirmed, targets the node the plan picks.
func TestTUIRolloutStep(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tstep", 1, 1)
	c := newCluster(t, env.Config, Options{})
	tm := program(t, c, false)
	send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("P")))
	waitScreen(t, tm, "Wave 1")
	send(tm, tuitest.Special(tea.KeyEnter))
	waitScreen(t, tm, "Start the rollout of pool "+p.Name)
	send(tm, tuitest.Typed("y"))
	clustertest.Eventually(ctx, t, "the node at the old config targeted", func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtOld[0], metav1.GetOptions{})
		return err == nil && nodeanno.Desired(n) == p.New, err
	})
}

// TestTUIReadOnly: a read-only program offers no action: the action keys open no
// confirmation, the actions it was given are never called, and nothing in the API
// server changes. No wall-clock wait: the program has ended (every key handled, and a
// write is only ever started by a confirmed key), and a barrier write of the test's
// own, once the source's watch delivers it, comes after any write the program made.
func TestTUIReadOnly(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tro", 2, 1)
	c := newCluster(t, env.Config, Options{})
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	before, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acts := &recordingActions{Actions: NewActions(c, "test")}
	tm := programWith(t, c, tui.Options{Actions: acts, ReadOnly: true, Refresh: -1})
	// Every action key, each followed by what would confirm it; then the preview,
	// whose enter would start a rollout.
	send(tm, tuitest.Seq(scope(p.Name), tuitest.Typed("py"), tuitest.Typed("Ry"), tuitest.Typed("my"), tuitest.Typed("by"), tuitest.Typed("ey"), tuitest.Special(tea.KeyEscape),
		tuitest.Typed("Py"), tuitest.Special(tea.KeyEnter), tuitest.Typed("y"), tuitest.Special(tea.KeyEscape), tuitest.Typed("?")))
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	out := tuitest.Plain(tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*screen).UI.View().Content)
	for _, s := range []string{"read-only", "Commands (:)"} {
		if !strings.Contains(out, s) {
			t.Errorf("the screen lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"Actions (each asks", "y/enter confirm", "spec.paused"} {
		if strings.Contains(out, s) {
			t.Errorf("a read-only program showed %q:\n%s", s, out)
		}
	}
	// The barrier: the watch delivers the pool's changes in order, so once the cache
	// shows this one, it holds any change the program made to the pool before.
	barrier := fmt.Sprintf(`{"metadata":{"annotations":{"test.mcotui.io/barrier":%q}}}`, t.Name())
	if _, err := pools.Patch(ctx, p.Name, types.MergePatchType, []byte(barrier), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cached(ctx, t, c, p.Name, func(pool *mcfgv1.MachineConfigPool) bool {
		return pool.Annotations["test.mcotui.io/barrier"] == t.Name()
	})
	if calls := acts.calls(); len(calls) > 0 {
		t.Errorf("a read-only program called its actions: %v", calls)
	}
	after, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(after.Annotations, "test.mcotui.io/barrier")
	if !equality.Semantic.DeepEqual(after.Spec, before.Spec) || !equality.Semantic.DeepEqual(after.Annotations, before.Annotations) {
		t.Errorf("the pool changed under a read-only program: %+v", after.Spec)
	}
	for _, mf := range after.ManagedFields {
		if mf.Manager == FieldManager {
			t.Errorf("the pool was written by %s: %+v", FieldManager, mf)
		}
	}
	for _, name := range append(p.AtNew, p.AtOld...) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeanno.Desired(n) != nodeanno.Current(n) {
			t.Errorf("node %s was targeted by a read-only program", name)
		}
	}
}

// recordingActions records every call of its actions before making it.
type recordingActions struct {
	action.Actions
	mu  sync.Mutex
	log []string
}

func (r *recordingActions) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, call)
}

func (r *recordingActions) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

func (r *recordingActions) SetPaused(ctx context.Context, pool string, paused bool) error {
	r.record("SetPaused " + pool)
	return r.Actions.SetPaused(ctx, pool, paused)
}

func (r *recordingActions) SetMaxUnavailable(ctx context.Context, pool string, v intstr.IntOrString) error {
	r.record("SetMaxUnavailable " + pool)
	return r.Actions.SetMaxUnavailable(ctx, pool, v)
}

func (r *recordingActions) Rollout(ctx context.Context, pool string, nodes []string) (rollout.Step, error) {
	r.record("Rollout " + pool)
	return r.Actions.Rollout(ctx, pool, nodes)
}

func (r *recordingActions) RollBack(ctx context.Context, pool, to, from string) error {
	r.record("RollBack " + pool)
	return r.Actions.RollBack(ctx, pool, to, from)
}

func (r *recordingActions) RollForward(ctx context.Context, pool, to string) error {
	r.record("RollForward " + pool)
	return r.Actions.RollForward(ctx, pool, to)
}

func (r *recordingActions) Retry(ctx context.Context, pool, node string) error {
	r.record("Retry " + node)
	return r.Actions.Retry(ctx, pool, node)
}

func (r *recordingActions) SetBootImageMode(ctx context.Context, sel operatorv1.MachineManagerSelector) error {
	r.record("SetBootImageMode")
	return r.Actions.SetBootImageMode(ctx, sel)
}

func (r *recordingActions) EvictPod(ctx context.Context, namespace, name string) error {
	r.record("EvictPod " + name)
	return r.Actions.EvictPod(ctx, namespace, name)
}

func (r *recordingActions) DeletePod(ctx context.Context, namespace, name string) error {
	r.record("DeletePod " + name)
	return r.Actions.DeletePod(ctx, namespace, name)
}
