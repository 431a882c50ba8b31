package interactive

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/sim/apisim"
	"github.com/mcotui/mcotui/sim/demo"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/screentest"
	"github.com/mcotui/mcotui/tui/source"
)

var updateDemo = flag.Bool("update-demo", false, "rewrite testdata/demo/*.golden from the current screens")

// demoGolden compares screen with testdata/demo/NAME.golden (the tests run from the
// module's root), or writes it with -update-demo.
func demoGolden(t *testing.T, name, screen string) {
	t.Helper()
	path := filepath.Join("testdata", "demo", name+".golden")
	if *updateDemo {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with go test ./cmd/interactive -run %s -update-demo)", err, t.Name())
	}
	if string(want) != screen {
		t.Errorf("the screen differs from %s (rewrite it with -update-demo if on purpose):\n--- want\n%s\n--- got\n%s", path, want, screen)
	}
}

func trimTo(s string, n int) string { return s[:min(n, len(s))] }

// fixedClock is the TUI's clock in the demo's build screens: ages do not move.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// demoBuilds starts apisim at the time t0 and plays the demo's image builds on it
// (demo.ImageBuilds, as `mcotui demo` runs them) up to after: by then master's build
// has failed and worker's still builds, when after is
// demo.BuildQueued+demo.FailDuration.
func demoBuilds(t *testing.T, t0 time.Time, openShiftNames bool, after time.Duration) (*apisim.Server, *demo.ImageBuilds, map[string]string) {
	t.Helper()
	ctx := kubetest.Context(t)
	srv, err := apisim.Start(ctx, apisim.Options{Clock: clocktesting.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := kube.NewClients(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	b := demo.NewImageBuilds(c, openShiftNames, 1)
	rendered := map[string]string{"master": "rendered-master-0b6f4e2d8a1c3e5f7a9b1d3f5c7e9a2b", "worker": "rendered-worker-5c2f9a1e3b7d4c6e8f0a2b4c6d8e0f1a"}
	for pool, config := range rendered {
		p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: mcfgv1.MachineConfigPoolSpec{
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: config}},
		}}
		if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Seed(ctx, t0, rendered); err != nil {
		t.Fatal(err)
	}
	if err := b.Step(ctx, t0.Add(after)); err != nil {
		t.Fatal(err)
	}
	return srv, b, rendered
}

// demoProgram runs the real TUI on a source over srv, at w x h, its clock at now.
func demoProgram(t *testing.T, srv *apisim.Server, w, h int, now time.Time) (*screentest.Screen, *teatest.TestModel) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cluster, err := source.New(ctx, srv.Config(), source.Options{Context: "demo", Now: fixedClock(now).Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	if err := cluster.WaitForSync(kubetest.Context(t)); err != nil {
		t.Fatal(err)
	}
	sub := cluster.Subscribe()
	t.Cleanup(sub.Close)
	screen := screentest.NewScreen(tui.New(sub, tui.Options{Actions: source.NewActions(cluster, "test"), Clock: fixedClock(now), Refresh: -1}))
	tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	t.Cleanup(func() {
		_ = tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	})
	return screen, tm
}

func typeKeys(tm *teatest.TestModel, keys string) {
	for _, r := range keys {
		tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// TestDemoBuildsView: the demo's builds view (i), on the simulated API server with the
// demo's image builds played to the moment master's build has failed and worker's still
// builds: both builds are listed with their state, the failed one selected first with
// why; with --openshift-names the builds have MCO's full-length names. Goldens at 80x24
// and 200x60.
func TestDemoBuildsView(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	after := demo.BuildQueued + demo.FailDuration
	for _, sc := range []struct {
		name           string
		openShiftNames bool
		w, h           int
	}{
		{"openshift-80x24", true, 80, 24},
		{"openshift-200x60", true, 200, 60},
		{"short-80x24", false, 80, 24},
	} {
		t.Run(sc.name, func(t *testing.T) {
			srv, b, rendered := demoBuilds(t, t0, sc.openShiftNames, after)
			failed, building := b.BuildName("master", rendered["master"]), b.BuildName("worker", rendered["worker"])
			screen, tm := demoProgram(t, srv, sc.w, sc.h, t0.Add(after+10*time.Second))
			screen.WaitFor(t, "connected")
			typeKeys(tm, "i")
			screen.WaitFor(t, "Build Failed")
			last := screen.Last()
			for _, want := range []string{"Image builds", trimTo(failed, 20), trimTo(building, 20), "Failed", "Building", "Job build-"} {
				if !strings.Contains(last, want) {
					t.Errorf("the builds view lacks %q:\n%s", want, last)
				}
			}
			demoGolden(t, "builds-"+sc.name, last)
		})
	}
}

// TestDemoRebuild: r on the demo's failed build, confirmed, writes MCO's rebuild
// annotation, and the demo's build controller makes the build again: the view shows it
// Prepared with the rebuild pending, then Succeeded with the annotation gone.
func TestDemoRebuild(t *testing.T) {
	ctx := kubetest.Context(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	after := demo.BuildQueued + demo.FailDuration
	srv, b, rendered := demoBuilds(t, t0, true, after)
	failed := b.BuildName("master", rendered["master"])
	screen, tm := demoProgram(t, srv, 200, 60, t0.Add(after+10*time.Second))
	screen.WaitFor(t, "connected")
	typeKeys(tm, "i")
	screen.WaitFor(t, "Build Failed")
	typeKeys(tm, "r")
	screen.WaitFor(t, "Rebuild the OS image of pool master")
	typeKeys(tm, "y")

	c, err := kube.NewClients(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the rebuild annotation on MachineOSConfig master", func() (bool, string) {
		m, err := c.MachineConfig.MachineconfigurationV1().MachineOSConfigs().Get(ctx, "master", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return imagemode.RebuildPending(m), fmt.Sprintf("annotations %v", m.Annotations)
	})
	at := after + 11*time.Second
	if err := b.Step(ctx, t0.Add(at)); err != nil {
		t.Fatal(err)
	}
	screen.WaitFor(t, "Prepared")
	if err := b.Step(ctx, t0.Add(at+demo.BuildQueued+demo.BuildDuration)); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the rebuilt "+failed+" on screen", func() (bool, string) {
		last := screen.Last()
		return !strings.Contains(last, "Build Failed") && strings.Count(last, "Succeeded") >= 1, last
	})
	m, err := c.MachineConfig.MachineconfigurationV1().MachineOSConfigs().Get(ctx, "master", metav1.GetOptions{})
	if err != nil || imagemode.RebuildPending(m) || m.Status.CurrentImagePullSpec == "" {
		t.Errorf("MachineOSConfig master after the rebuild: %v %v %+v; want no rebuild annotation and an image", err, m.Annotations, m.Status)
	}
}
