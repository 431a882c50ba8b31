package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// fakeForecast is an action.DrainForecast over pods of its own, forecast with
// drainforecast.Check as the kube one does: on the first draining node a router pod
// under a budget that allows no disruption, on the second a bare debug pod and a pod
// with an emptyDir, as on OpenShift (names at its length). Until gate is closed it
// waits, as a read of a large cluster does.
type fakeForecast struct {
	gate chan struct{}
	err  error
}

func (f *fakeForecast) DrainForecast(ctx context.Context, members []*corev1.Node, draining []string, maxUnavailable int) (drainforecast.Report, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return drainforecast.Report{}, ctx.Err()
		}
	}
	if f.err != nil {
		return drainforecast.Report{}, f.err
	}
	in := drainforecast.Input{Members: members, Draining: draining, MaxUnavailable: maxUnavailable}
	rs := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Controller: new(true)}}
	pod := func(ns, name, node string, owners []metav1.OwnerReference, vols ...corev1.Volume) {
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": strings.SplitN(name, "-", 3)[0] + "-" + strings.SplitN(name, "-", 3)[1]}, OwnerReferences: owners},
			Spec:       corev1.PodSpec{NodeName: node, Volumes: vols, Containers: []corev1.Container{{Name: "c"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	if len(draining) > 0 {
		pod("openshift-ingress", "router-default-6f7d9c8b5-x2x9k", draining[0], rs)
		in.Budgets = append(in.Budgets, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-ingress", Name: "router-default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "router-default"}}},
		})
	}
	if len(draining) > 1 {
		pod("openshift-debug", "debug-node-"+draining[1], draining[1], nil)
		pod("openshift-monitoring", "prometheus-k8s-0", draining[1], rs,
			corev1.Volume{Name: "prometheus-k8s-db", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	return drainforecast.Check(in), nil
}

// newForecastUI is the fixture as on OpenShift, whose worker pool's new config also
// sets a kernel argument: its nodes reboot, so they drain.
func newForecastUI(df *fakeForecast) (*UI, *model.ChanSource) {
	return newForecastUIWith(df, nil)
}

// newForecastUIWith is newForecastUI with the worker pool's maxUnavailable set, when
// maxUnavailable is not nil.
func newForecastUIWith(df *fakeForecast, maxUnavailable *intstr.IntOrString) (*UI, *model.ChanSource) {
	ev := fixture.SmallOpenShift()
	for i, e := range ev {
		if p := e.Pool; p != nil && p.Name == "worker" && maxUnavailable != nil {
			p = p.DeepCopy()
			p.Spec.MaxUnavailable = maxUnavailable
			ev[i].Pool = p
		}
		if mc := e.MachineConfig; mc != nil && mc.Name == fixture.WorkerNew {
			mc = mc.DeepCopy()
			mc.Spec.KernelArguments = append(mc.Spec.KernelArguments, "nosmt")
			ev[i].MachineConfig = mc
		}
		// One more node still at the old config, for two that drain.
		if n := e.Node; n != nil && n.Name == fixture.OpenShiftName("ci-ln-9xsm9-worker-a-7hq4p") {
			n = n.DeepCopy()
			n.Annotations[nodeanno.CurrentConfigKey] = fixture.WorkerOld
			n.Annotations[nodeanno.DesiredConfigKey] = fixture.WorkerOld
			ev[i].Node = n
		}
	}
	src := model.NewChanSource(fixture.ManagedInfo, ev, 16)
	return New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1,
		Actions: &tuitest.Actions{}, DrainForecast: df}), src
}

// TestPreviewDrainForecast: the rollout preview (P) of a pool whose nodes are named
// at OpenShift's length says "reading pods…" while its drain forecast is read, then
// lists, as it arrives, each node whose drain blocks or loses data with the kinds, and
// each pod; a read the API server refuses is said, with its reason, instead of a
// forecast that never comes. At the smallest and the largest size.
func TestPreviewDrainForecast(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			df := &fakeForecast{gate: make(chan struct{})}
			ui, src := newForecastUI(df)
			t.Cleanup(src.Close)
			drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: size.w, Height: size.h}}, tuitest.Seq(poolAt(2), tuitest.Typed("P"))...)...)
			reading := tuitest.Plain(ui.View().Content)
			checkShape(t, ui.View().Content, size.w, size.h)
			if !strings.Contains(reading, "drain forecast reading pods…") {
				t.Fatalf("no reading pods… in the preview while the read waits:\n%s", reading)
			}
			t.Run("reading", func(t *testing.T) { tuitest.Golden(t, ui.View().Content) })

			close(df.gate)
			settle(ui, func() bool { return strings.Contains(tuitest.Plain(ui.View().Content), "will block") })
			view := tuitest.Plain(ui.View().Content)
			checkShape(t, ui.View().Content, size.w, size.h)
			if !strings.Contains(view, "drain forecast 2 nodes drain: 1 will block, 1 lose data") {
				t.Errorf("the forecast's summary is not at the preview's top:\n%s", view)
			}
			t.Run("arrived", func(t *testing.T) { tuitest.Golden(t, ui.View().Content) })
			// The detail is below the waves: scrolled to, it names each node whole with
			// its kinds, and each pod.
			drive(ui, tuitest.Typed("G")...)
			bottom := tuitest.Plain(ui.View().Content)
			checkShape(t, ui.View().Content, size.w, size.h)
			for _, want := range []string{"Drain forecast  2 of 2 nodes block or lose data",
				fixture.OpenShiftName("ci-ln-9xsm9-worker-a-7hq4p") + "  blocks: PDB",
				fixture.OpenShiftName("ci-ln-9xsm9-worker-d-zz91c") + "  loses data: Unmanaged,",
				"pod openshift-ingress/router-default-6f7d9c8b5-x2x9k:", "pod openshift-monitoring/prometheus-k8s-0: emptyDir", "capacity: with"} {
				if !strings.Contains(bottom, want) {
					t.Errorf("%q not at the preview's end:\n%s", want, bottom)
				}
			}
			t.Run("end", func(t *testing.T) { tuitest.Golden(t, ui.View().Content) })
		})
	}
	t.Run("forbidden", func(t *testing.T) {
		forbidden := fmt.Errorf("list pods for the drain forecast: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errors.New(`User "oncall" cannot list resource "pods" in API group "" at the cluster scope`)))
		ui, src := newForecastUI(&fakeForecast{err: forbidden})
		t.Cleanup(src.Close)
		drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: 200, Height: 60}}, tuitest.Seq(poolAt(2), tuitest.Typed("P"))...)...)
		settle(ui, func() bool { return strings.Contains(tuitest.Plain(ui.View().Content), "cannot read") })
		view := tuitest.Plain(ui.View().Content)
		if !strings.Contains(view, "drain forecast cannot read: list pods for the drain forecast: pods is forbidden") ||
			!strings.Contains(view, "at the cluster scope") {
			t.Errorf("the refusal is not in the preview:\n%s", view)
		}
		tuitest.Golden(t, ui.View().Content)
	})
}

// TestPreviewDrainForecastMidRollout: mid-rollout, with the updates in flight holding
// all of the pool's maxUnavailable (3 of the worker pool's nodes updating, 3 at once),
// the preview still shows the waves that follow them, says Wave 1 starts once the
// nodes updating now finish and names those, and the drain forecast covers the waves:
// not "no node drains".
func TestPreviewDrainForecastMidRollout(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			three := intstr.FromInt32(3)
			ui, src := newForecastUIWith(&fakeForecast{}, &three)
			t.Cleanup(src.Close)
			drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: size.w, Height: size.h}}, tuitest.Seq(poolAt(2), tuitest.Typed("P"))...)...)
			settle(ui, func() bool { return strings.Contains(tuitest.Plain(ui.View().Content), "will block") })
			view := tuitest.Plain(ui.View().Content)
			checkShape(t, ui.View().Content, size.w, size.h)
			for _, want := range []string{"maxUnavailable 3 node(s) at once", "drain forecast 2 nodes drain: 1 will block, 1 lose data",
				"updating now   3: ", "Wave 1: once the updates now in flight finish  2 node(s)"} {
				if !strings.Contains(view, want) {
					t.Errorf("%q not in the mid-rollout preview:\n%s", want, view)
				}
			}
			if strings.Contains(view, "Wave 1: the next step") {
				t.Errorf("the preview calls a wave that waits for the nodes in flight the next step:\n%s", view)
			}
			tuitest.Golden(t, ui.View().Content)
		})
	}
}

// TestPreviewDrainForecastProgram: the same preview in the real program (teatest), the
// forecast arriving while it runs, at the smallest and largest size, styles and all.
func TestPreviewDrainForecastProgram(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			df := &fakeForecast{gate: make(chan struct{})}
			ui, src := newForecastUI(df)
			t.Cleanup(src.Close)
			tm := teatest.NewTestModel(t, ui, teatest.WithInitialTermSize(size.w, size.h),
				teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI256), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
			for _, msg := range tuitest.Seq(poolAt(2), tuitest.Typed("P")) {
				tm.Send(msg)
			}
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), "reading pods…") },
				teatest.WithDuration(10*time.Second))
			close(df.gate)
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), "will block") },
				teatest.WithDuration(10*time.Second))
			if err := tm.Quit(); err != nil {
				t.Fatal(err)
			}
			final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*UI)
			checkShape(t, final.View().Content, size.w, size.h)
			tuitest.GoldenStyled(t, final.View().Content)
		})
	}
}
