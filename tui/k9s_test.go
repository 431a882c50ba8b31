package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestQuitStepsBackFirst: q is k9s's way back: it closes the detail, then clears the
// filter, then widens the grid to every pool, and only then quits.
func TestQuitStepsBackFirst(t *testing.T) {
	ui, src := newScenarioUI(scenario{})
	t.Cleanup(src.Close)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(ui, tuitest.Seq(tuitest.Typed(":pool master"), tuitest.Special(tea.KeyEnter),
		tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter))...)
	if !ui.showDetail || ui.grid.Query().Filter.IsZero() || ui.grid.Query().Pool != "master" {
		t.Fatalf("setup: detail %v, query %+v\n%s", ui.showDetail, ui.grid.Query(), tuitest.Plain(ui.View().Content))
	}
	for i, want := range []func() bool{
		func() bool { return !ui.showDetail && !ui.grid.Query().Filter.IsZero() },
		func() bool { return ui.grid.Query().Filter.IsZero() && ui.grid.Query().Pool == "master" },
		func() bool { return ui.grid.Query().Pool == "" },
	} {
		_, cmd := ui.Update(tuitest.Typed("q")[0])
		if quits(cmd) {
			t.Fatalf("q number %d quit before stepping back", i+1)
		}
		if !want() {
			t.Fatalf("q number %d did not step back: detail %v, query %+v", i+1, ui.showDetail, ui.grid.Query())
		}
	}
	if _, cmd := ui.Update(tuitest.Typed("q")[0]); !quits(cmd) {
		t.Error("q at the top did not quit")
	}
}

// TestSwitchContext: :ctx lists the kubeconfig's contexts, marking the current one;
// :ctx NAME ends the program with SwitchTo set, for its runner to open the TUI there;
// an unknown name is refused, naming the ones there are; a terminal that drives a
// rollout does not switch away from it.
func TestSwitchContext(t *testing.T) {
	newUI := func(driver bool) *UI {
		ui, src := newScenarioUI(scenario{managed: true, driver: driver})
		t.Cleanup(src.Close)
		t.Cleanup(ui.stopDrive)
		ui.opts.Contexts = []string{fixture.Info.Context, "prod-east"}
		drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
		return ui
	}
	command := func(ui *UI, s string) tea.Cmd {
		drive(ui, tuitest.Typed(":"+s)...)
		_, cmd := ui.Update(tuitest.Special(tea.KeyEnter)[0])
		return cmd
	}

	ui := newUI(false)
	command(ui, "ctx")
	screen := tuitest.Plain(ui.View().Content)
	if ui.dialog == nil || !strings.Contains(screen, "* "+fixture.Info.Context) || !strings.Contains(screen, "  prod-east") {
		t.Errorf(":ctx does not list the contexts, the current one marked:\n%s", screen)
	}
	drive(ui, tuitest.Special(tea.KeyEscape)...)
	if cmd := command(ui, "ctx nowhere"); quits(cmd) || !strings.Contains(ui.promptErr, "prod-east") {
		t.Errorf(":ctx nowhere: quit %v, error %q", quits(cmd), ui.promptErr)
	}
	if cmd := command(ui, "ctx prod-east"); !quits(cmd) || ui.SwitchTo() != "prod-east" {
		t.Errorf(":ctx prod-east: quit %v, SwitchTo %q", quits(cmd), ui.SwitchTo())
	}

	ui = newUI(true)
	drive(ui, tuitest.Seq(tuitest.Typed(":pool worker"), tuitest.Special(tea.KeyEnter), tuitest.Typed("D"), tuitest.Typed("y"))...)
	if ui.drive == nil {
		t.Fatalf("setup: not driving:\n%s", tuitest.Plain(ui.View().Content))
	}
	if cmd := command(ui, "ctx prod-east"); quits(cmd) || ui.SwitchTo() != "" || !strings.Contains(ui.notice, "drives the rollout of pool worker") {
		t.Errorf("a driving terminal switched: quit %v, SwitchTo %q, notice %q", quits(cmd), ui.SwitchTo(), ui.notice)
	}
}

// fixturePods are the pods behind fixture.BlockedNode: the pod holding its drain
// back (fixture.Blockers), its budget, and the node's agent, each with a log line.
func fixturePods() *tuitest.Pods {
	one := intstr.FromInt32(1)
	pod := func(ns, name string, labels map[string]string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(fixture.Now.Add(-time.Hour))},
			Spec:       corev1.PodSpec{NodeName: fixture.BlockedNode, Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/" + name + ":1"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true}}},
		}
	}
	return &tuitest.Pods{
		Pods: []corev1.Pod{
			pod("default", "web-0", map[string]string{"app": "web"}),
			pod("mcotui", "mcotui-agent-x7k2p", map[string]string{"app.kubernetes.io/name": "mcotui-agent"}),
		},
		Budgets: []policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1},
		}},
		Logs: map[string]string{
			"default/web-0":             "serving on :8080\n",
			"mcotui/mcotui-agent-x7k2p": "level=INFO msg=\"drain: waiting on default/web-0\"\n",
		},
	}
}

// TestPodsFromANode: from the node whose drain is blocked, l shows its agent's log, o
// the blocking pod's YAML (and l there that pod's log), B its budget with what it allows
// now, :pods the node's pods with the blocker marked, :events the cluster's Events.
func TestPodsFromANode(t *testing.T) {
	for _, c := range []struct {
		name  string
		keys  []tea.Msg
		title string
		shows []string
	}{
		{"agent log", tuitest.Typed("l"), "Log of the agent on node " + fixture.BlockedNode, []string{"# pod mcotui/mcotui-agent-x7k2p", "drain: waiting on default/web-0"}},
		{"pod", tuitest.Typed("o"), "Pod default/web-0 (YAML)", []string{"kind: Pod", "image: registry.example.com/web-0:1", "l this pod's log"}},
		{"pod log", tuitest.Typed("ol"), "Log of pod default/web-0", []string{"serving on :8080"}},
		{"budgets", tuitest.Typed("B"), "PodDisruptionBudgets of pod default/web-0", []string{"# 0 disruptions allowed now: PodDisruptionBudget default/web", "kind: PodDisruptionBudget"}},
		{"pods", tuitest.Seq(tuitest.Typed(":pods"), tuitest.Special(tea.KeyEnter)), "Pods on node " + fixture.BlockedNode, []string{"▸ default    web-0", "1/1", "Running", "▸ holds the node's drain back", "  mcotui     mcotui-agent-x7k2p"}},
		{"pdb", tuitest.Seq(tuitest.Typed(":pdb"), tuitest.Special(tea.KeyEnter)), "PodDisruptionBudgets of pod default/web-0", []string{"0 disruptions allowed"}},
		{"events", tuitest.Seq(tuitest.Typed(":events"), tuitest.Special(tea.KeyEnter)), "Events (", []string{"LAST SEEN", "REASON"}},
	} {
		for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, size.w, size.h), func(t *testing.T) {
				ui, src := newScenarioUI(scenario{pods: true, events: true})
				t.Cleanup(src.Close)
				drive(ui, tea.WindowSizeMsg{Width: size.w, Height: size.h})
				drive(ui, tuitest.Seq(tuitest.Typed(":node "+fixture.BlockedNode), tuitest.Special(tea.KeyEnter))...)
				drive(ui, c.keys...)
				screen := tuitest.Plain(ui.View().Content)
				if ui.dialog == nil || !strings.Contains(ui.dialog.Title(), c.title) {
					t.Fatalf("no %q:\n%s", c.title, screen)
				}
				checkShape(t, ui.View().Content, size.w, size.h)
				for _, s := range c.shows {
					if !strings.Contains(screen, s) {
						t.Errorf("%s does not show %q:\n%s", c.title, s, screen)
					}
				}
			})
		}
	}
}

// TestBootImageAgesMove: the boot images view's condition ages follow the clock on
// each tick, not only when the MachineConfiguration changes.
func TestBootImageAgesMove(t *testing.T) {
	clock := &movingClock{now: fixture.Now}
	ui := New(fixture.Source(16), Options{Clock: clock, Refresh: -1, NoticeTimeout: -1})
	drive(ui, tea.WindowSizeMsg{Width: 160, Height: 50})
	drive(ui, tuitest.Typed("b")...)
	before := tuitest.Plain(ui.View().Content)
	clock.add(3 * time.Hour)
	drive(ui, tickMsg(clock.Now()))
	after := tuitest.Plain(ui.View().Content)
	ages := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "BootImageUpdate") {
				out = append(out, l)
			}
		}
		return out
	}
	if len(ages(before)) == 0 {
		t.Fatalf("the boot images view shows no condition:\n%s", before)
	}
	if strings.Join(ages(before), "\n") == strings.Join(ages(after), "\n") {
		t.Errorf("three hours on, the conditions' ages did not move:\n%s", strings.Join(ages(after), "\n"))
	}
}

// TestBootModeSaysSkewAlarm: on a cluster whose boot image skew is recorded Automatic
// (every Machine API MachineSet managed, spec.bootImageSkewEnforcement unset), the
// confirmation of a change to None says that the skew is then recorded Manual, at the
// install version, and may block upgrades: the alarm the change raises, said first.
func TestBootModeSaysSkewAlarm(t *testing.T) {
	events := fixture.Small()
	for i, e := range events {
		if e.Kind != model.KindMachineConfiguration {
			continue
		}
		m := e.MachineConfiguration.DeepCopy()
		for j := range m.Spec.ManagedBootImages.MachineManagers {
			m.Spec.ManagedBootImages.MachineManagers[j].Selection = operatorv1.MachineManagerSelector{Mode: operatorv1.All}
		}
		m.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{}
		m.Status.BootImageSkewEnforcementStatus = operatorv1.BootImageSkewEnforcementStatus{
			Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic, Automatic: operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.21.0"}}
		events[i] = model.MachineConfigurationEvent(m)
	}
	src := model.NewChanSource(fixture.ManagedInfo, events, 16)
	t.Cleanup(src.Close)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, Actions: &tuitest.Actions{}})
	drive(ui, tea.WindowSizeMsg{Width: 160, Height: 50})
	// All → None: tab from All.
	drive(ui, tuitest.Seq(tuitest.Typed("bm"), tuitest.Special(tea.KeyTab, tea.KeyEnter))...)
	screen := tuitest.Plain(ui.View().Content)
	if ui.dialog == nil || !strings.Contains(ui.dialog.Title(), "Set the boot image mode to None") {
		t.Fatalf("no confirmation of None:\n%s", screen)
	}
	flat := strings.Join(strings.Fields(screen), " ")
	for _, s := range []string{"recorded Manual instead of Automatic", "blocks upgrades"} {
		if !strings.Contains(strings.ReplaceAll(flat, "│ ", ""), s) {
			t.Errorf("the confirmation does not say %q:\n%s", s, screen)
		}
	}
}
