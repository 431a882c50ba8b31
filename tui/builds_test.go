package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// newBuildsUI is the TUI over the small OpenShift cluster with image mode pools
// (fixture.SmallWithBuilds), whose failed build's builder pod has a log.
func newBuildsUI(readOnly bool) (*UI, *tuitest.Actions) {
	src := model.NewChanSource(fixture.Info, fixture.SmallWithBuilds(), 16)
	pods := &tuitest.Builds{Pods: tuitest.Pods{Pods: fixture.BuilderPods(),
		Logs: map[string]string{"openshift-machine-config-operator/" + fixture.BuilderPod: strings.Join(fixture.BuildLog, "\n") + "\n"}}}
	acts := &tuitest.Actions{}
	return New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, ReadOnly: readOnly,
		Actions: acts, Pods: pods}), acts
}

// TestBuildScreens: the builds view (i) at 80x24 and 200x60, with OpenShift-length
// names: worker's failed build selected, its conditions, builder Job and why it failed;
// then its builder's log followed (l), whose last lines say what failed; then the
// rebuild's confirmation (r).
func TestBuildScreens(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		for _, sc := range []struct {
			name  string
			keys  []tea.Msg
			until string
		}{
			{"builds", tuitest.Typed("i"), ""},
			{"log", tuitest.Typed("il"), "error: Packages not found: tmux"},
			// infra's build has no pod yet: the log says so, naming the Job.
			{"log-no-pod", tuitest.Typed("ikl"), "Log not followed"},
			{"rebuild", tuitest.Typed("ir"), ""},
			{"command", tuitest.Seq(tuitest.Typed(":mosb "+fixture.RunningBuild), tuitest.Special(tea.KeyEnter)), ""},
			{"command-pool", tuitest.Seq(tuitest.Typed(":mosc infra"), tuitest.Special(tea.KeyEnter)), ""},
		} {
			t.Run(fmt.Sprintf("%dx%d/%s", size.w, size.h, sc.name), func(t *testing.T) {
				ui, _ := newBuildsUI(false)
				drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: size.w, Height: size.h}}, sc.keys...)...)
				if sc.until != "" {
					settle(ui, func() bool { return strings.Contains(ui.View().Content, sc.until) })
				}
				view := ui.View().Content
				checkShape(t, view, size.w, size.h)
				tuitest.Golden(t, view)
				plain := tuitest.Plain(view)
				switch sc.name {
				case "builds":
					for _, want := range []string{"Image builds", fixture.FailedBuild[:20], "Failed", "Failed: Build Failed", "Job build-"} {
						if !strings.Contains(plain, want) {
							t.Errorf("missing %q in\n%s", want, plain)
						}
					}
				case "log":
					if !strings.Contains(plain, "Log of pod build-"+fixture.FailedBuild[:20]) {
						t.Errorf("the log does not say whose it is:\n%s", plain)
					}
				case "rebuild":
					for _, want := range []string{"Rebuild the OS image of pool worker", "MachineOSConfig worker", "machineconfiguration.openshift.io/rebuild"} {
						if !strings.Contains(plain, want) {
							t.Errorf("missing %q in\n%s", want, plain)
						}
					}
				case "log-no-pod":
					if !strings.Contains(strings.Join(strings.Fields(plain), " "), "no pod of Job openshift-machine-config-operator/build-"+fixture.RunningBuild) {
						t.Errorf("the log does not say the Job has no pod:\n%s", plain)
					}
				case "command", "command-pool":
					if !strings.Contains(plain, "Build "+fixture.RunningBuild) {
						t.Errorf(":mosb NAME did not select %s:\n%s", fixture.RunningBuild, plain)
					}
				}
			})
		}
	}
}

// TestBuildStreams: the builds view lists OSImageStream/cluster's streams, the default
// marked, with the pools on each: infra names rhel-10, master and worker use the
// default.
func TestBuildStreams(t *testing.T) {
	ui, _ := newBuildsUI(true)
	drive(ui, tea.WindowSizeMsg{Width: 200, Height: 60}, tuitest.Typed("i")[0])
	plain := tuitest.Plain(ui.View().Content)
	for _, want := range []string{
		"rhel-9   default  master, worker  " + fixture.RHEL9Image,
		"rhel-10           infra           " + fixture.RHEL10Image,
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("missing %q in\n%s", want, plain)
		}
	}
}

// TestRebuildFlow drives the real program (teatest): i opens the builds view, r asks
// to confirm the rebuild of the selected build's MachineOSConfig, y makes it through
// the session's Actions, once, and the footer says so. A read-only session offers no
// rebuild and says why, writing nothing.
func TestRebuildFlow(t *testing.T) {
	run := func(t *testing.T, readOnly bool) (*teatest.TestModel, *tuitest.Actions) {
		ui, acts := newBuildsUI(readOnly)
		tm := teatest.NewTestModel(t, ui, teatest.WithInitialTermSize(80, 24),
			teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI256), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
		t.Cleanup(func() { _ = tm.Quit() })
		return tm, acts
	}
	wait := func(t *testing.T, tm *teatest.TestModel, text string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), text) }, teatest.WithDuration(20*time.Second))
	}
	t.Run("confirmed", func(t *testing.T) {
		tm, acts := run(t, false)
		tm.Type("i")
		wait(t, tm, "Image builds")
		tm.Type("r")
		wait(t, tm, "Rebuild the OS image of pool worker")
		if calls := acts.Calls(); len(calls) != 0 {
			t.Fatalf("actions before the confirmation: %v", calls)
		}
		tm.Type("y")
		wait(t, tm, "Asked MCO to rebuild the image of MachineOSConfig worker")
		if err := tm.Quit(); err != nil {
			t.Fatal(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		if calls := acts.Calls(); !slices.Equal(calls, []string{"Rebuild worker"}) {
			t.Errorf("actions = %v, want one Rebuild worker", calls)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		tm, acts := run(t, false)
		tm.Type("ij") // from worker's failed build (selected first) to its succeeded one
		wait(t, tm, "Image builds")
		tm.Type("r")
		wait(t, tm, "Rebuild the OS image of pool worker")
		tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
		tm.Type("kk") // infra's build, first in the table
		tm.Type("r")
		wait(t, tm, "Rebuild the OS image of pool infra")
		tm.Type("n")
		if err := tm.Quit(); err != nil {
			t.Fatal(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		if calls := acts.Calls(); len(calls) != 0 {
			t.Errorf("actions after cancelling = %v, want none", calls)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		tm, acts := run(t, true)
		tm.Type("ir")
		wait(t, tm, "is not offered: this session is read-only")
		if err := tm.Quit(); err != nil {
			t.Fatal(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		if calls := acts.Calls(); len(calls) != 0 {
			t.Errorf("actions in a read-only session = %v, want none", calls)
		}
	})
}

// pipeBuilds is an action.Builds whose followed log is a pipe the test writes to, as a
// running builder's log grows.
type pipeBuilds struct {
	tuitest.Builds
	r *io.PipeReader
}

func (p *pipeBuilds) FollowLog(context.Context, string, string, string, int64) (io.ReadCloser, error) {
	return p.r, nil
}

// TestBuildLogStopsWhenLeft: a followed log's stream ends once the builds view is left
// (at its next lines, which are not added), and says so when the view is back.
func TestBuildLogStopsWhenLeft(t *testing.T) {
	r, w := io.Pipe()
	t.Cleanup(func() { _ = w.Close() })
	src := model.NewChanSource(fixture.Info, fixture.SmallWithBuilds(), 16)
	pods := &pipeBuilds{Builds: tuitest.Builds{Pods: tuitest.Pods{Pods: fixture.BuilderPods()}}, r: r}
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, Pods: pods})
	drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: 120, Height: 40}}, tuitest.Typed("il")...)...)
	go func() { _, _ = io.WriteString(w, "STEP 1/12: FROM base\n") }()
	settle(ui, func() bool { return strings.Contains(ui.View().Content, "STEP 1/12") })
	drive(ui, tuitest.Special(tea.KeyEscape)...)
	go func() { _, _ = io.WriteString(w, "STEP 2/12: written while away\n") }()
	settle(ui, func() bool { return ui.blog.cancel == nil })
	drive(ui, tuitest.Typed("i")...)
	plain := tuitest.Plain(ui.View().Content)
	if !strings.Contains(plain, "stopped when the view was left") || strings.Contains(plain, "STEP 2/12") {
		t.Errorf("after leaving the view, the log:\n%s", plain)
	}
}
