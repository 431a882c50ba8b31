package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/screentest"
)

func driverUI(t *testing.T, managed bool, d action.Driver) *UI {
	t.Helper()
	src := fixture.Source(16)
	if managed {
		src = fixture.ManagedSource(16)
	}
	t.Cleanup(src.Close)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1, Actions: &tuitest.Actions{}, Driver: d})
	t.Cleanup(ui.stopDrive)
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	return ui
}

// TestDriveAsksThenDrives: D on a pool asks first, saying what this terminal will do
// (drive pool worker while it stays open, how many nodes, maxUnavailable, the Lease);
// esc drives nothing; y starts the Driver on that pool; D again stops it.
func TestDriveAsksThenDrives(t *testing.T) {
	d := &tuitest.Driver{}
	ui := driverUI(t, true, d)
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"))...)
	if got := confirmTitle(ui); got != "Drive the rollout of pool worker" {
		t.Fatalf("confirmation %q (notice %q)", got, ui.notice)
	}
	view := tuitest.Plain(ui.View().Content)
	for _, want := range []string{"This terminal will drive the rollout of pool worker while it stays open", "maxUnavailable 4", "Lease mcotui/mcotui-controller"} {
		if !strings.Contains(strings.Join(strings.Fields(view), " "), want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, view)
		}
	}
	drive(ui, tuitest.Special(tea.KeyEscape)...)
	if pools, _ := d.Driven(); len(pools) != 0 || ui.drive != nil {
		t.Fatalf("esc drove %v", pools)
	}
	drive(ui, tuitest.Typed("D")...)
	drive(ui, tuitest.Typed("y")...)
	settle(ui, func() bool { return ui.drive == nil || ui.drive.leading })
	if pools, _ := d.Driven(); !slices.Equal(pools, []string{"worker"}) || ui.drive == nil || !ui.drive.leading {
		t.Fatalf("after y: driven %v, drive %+v", pools, ui.drive)
	}
	if status := tuitest.Plain(ui.statusView()); !strings.Contains(status, " driving worker ") {
		t.Errorf("the status line does not say it drives: %q", status)
	}
	drive(ui, tuitest.Typed("D")...)
	settle(ui, func() bool { return ui.drive == nil }) // the Driver's last words, then its end
	if _, stopped := d.Driven(); stopped != 1 || ui.drive != nil {
		t.Fatalf("D again: stopped %d, drive %+v", stopped, ui.drive)
	}
	if !strings.Contains(ui.notice, "Stopped driving pool worker; the Lease is released") {
		t.Errorf("notice %q", ui.notice)
	}
}

// TestDriveChecksTheLeaseFirst: D asks who holds the Lease before it asks to confirm.
// Held by someone (the controller, another terminal), it says who and asks nothing;
// when the look fails, it says so and asks nothing.
func TestDriveChecksTheLeaseFirst(t *testing.T) {
	d := &tuitest.Driver{HeldBy: "mcotui-controller-7f9c4d-x2x5q"}
	ui := driverUI(t, true, d)
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"))...)
	if got := confirmTitle(ui); got != "" {
		t.Fatalf("a confirmation %q opened while the Lease is held", got)
	}
	if want := "the Lease mcotui/mcotui-controller is held by mcotui-controller-7f9c4d-x2x5q"; !strings.Contains(ui.notice, want) || !ui.noticeErr {
		t.Fatalf("notice %q, want an error saying %q", ui.notice, want)
	}
	if pools, _ := d.Driven(); len(pools) != 0 || ui.drive != nil {
		t.Fatalf("drove %v with the Lease held", pools)
	}

	// A failed look (issue 36: the Lease's namespace missing) asks nothing: the drive
	// would fail the same way after the confirmation.
	d.HeldBy, d.HolderErr = "", errors.New(`namespace "mcotui" does not exist`)
	drive(ui, tuitest.Typed("D")...)
	if got := confirmTitle(ui); got != "" {
		t.Fatalf("after a failed look: confirmation %q, notice %q", got, ui.notice)
	}
	if !strings.Contains(ui.notice, "could not tell who holds the Lease mcotui/mcotui-controller") || !strings.Contains(ui.notice, "does not exist") {
		t.Errorf("notice %q does not say the look failed", ui.notice)
	}

	d.HolderErr = nil
	drive(ui, tuitest.Typed("D")...)
	if got := confirmTitle(ui); got != "Drive the rollout of pool worker" || ui.notice != "" {
		t.Fatalf("Lease free: confirmation %q, notice %q", got, ui.notice)
	}
}

// TestDriveNotOffered: on OpenShift (MCO drives), read-only, or with no Driver, D is
// not bound and a drive request that reaches the root anyway starts nothing.
func TestDriveNotOffered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		managed bool
		d       *tuitest.Driver
	}{{"mco", false, &tuitest.Driver{}}, {"no driver", true, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var d action.Driver
			if tc.d != nil {
				d = tc.d
			}
			ui := driverUI(t, tc.managed, d)
			if ui.c.Keys.Drive.Enabled() {
				t.Error("D is bound")
			}
			drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"))...)
			if ui.dialog != nil {
				t.Errorf("D opened %s", ui.dialog.Title())
			}
			drive(ui, common.ConfirmedMsg{Request: action.DriveRequest("worker", fixture.WorkerNew, 2, 3, "mcotui/mcotui-controller")})
			if ui.drive != nil {
				t.Error("a confirmed drive request started driving")
			}
			if tc.d != nil {
				if pools, _ := tc.d.Driven(); len(pools) != 0 {
					t.Errorf("driven %v", pools)
				}
			}
		})
	}
}

// TestDriveScreen runs the program, confirms driving pool worker, and compares the
// screen once the driver has taken a step: the status line says this terminal drives
// worker, the footer what it did last.
func TestDriveScreen(t *testing.T) {
	d := &tuitest.Driver{Reports: []action.DriveReport{{Leading: true, Target: fixture.WorkerNew, Targets: []string{"ci-ln-9xsm9-worker-d-zz91c"}}}}
	src := fixture.ManagedSource(16)
	t.Cleanup(src.Close)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, Actions: &tuitest.Actions{}, Driver: d})
	screen := screentest.NewScreen(ui)
	tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI256), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	for _, m := range tuitest.Seq(poolAt(2), tuitest.Typed("D")) {
		tm.Send(m)
	}
	// The confirmation opens once the look at the Lease has answered.
	screen.WaitFor(t, "Drive the rollout of pool worker")
	tm.Send(tuitest.Typed("y")[0])
	screen.WaitFor(t, "targeted ci-ln-9xsm9-worker-d-zz91c")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*screentest.Screen).Model().(*UI)
	final.stopDrive()
	view := final.View().Content
	checkShape(t, view, 120, 40)
	if !strings.Contains(tuitest.Plain(view), " driving worker ") {
		t.Errorf("the screen does not say it drives worker:\n%s", tuitest.Plain(view))
	}
	tuitest.GoldenStyled(t, view)
}

// TestDriveStopsWhenTheUIQuits: every way of quitting cancels the drive under way as it
// quits, without waiting for the Driver to notice: whoever runs the program waits for
// Drive to return before the process ends, and must not wait on a drive the user left.
// While a drive runs, q and :q ask once (a second q quits); q in the help only closes
// it; ctrl+c never asks.
func TestDriveStopsWhenTheUIQuits(t *testing.T) {
	q := tuitest.Typed("q")
	for _, tc := range []struct {
		name   string
		before []tea.Msg // to where the quitting key is; none of them quits
		key    tea.Msg
	}{
		{"q q", q, q[0]},
		{"ctrl+c", nil, ctrl('c')},
		{"q in the help, then q q", tuitest.Seq(tuitest.Typed("?"), q, q), q[0]},
		{"ctrl+c in a confirmation", tuitest.Typed("p"), ctrl('c')},
		{":q then q", tuitest.Seq(tuitest.Typed(":q"), tuitest.Special(tea.KeyEnter)), q[0]},
		{"ctrl+c in a prompt", tuitest.Typed(":"), ctrl('c')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &tuitest.Driver{}
			ui := driverUI(t, true, d)
			drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"), tuitest.Typed("y"))...)
			settle(ui, func() bool { return ui.drive.leading })
			ctxs := d.Contexts()
			if len(ctxs) != 1 || ctxs[0].Err() != nil {
				t.Fatalf("after y: %d drives, notice %q", len(ctxs), ui.notice)
			}
			for _, m := range tc.before {
				if _, cmd := ui.Update(m); quits(cmd) {
					t.Fatalf("%v quit before the quitting key", m)
				}
			}
			if ctxs[0].Err() != nil {
				t.Fatal("the drive stopped before the quitting key")
			}
			if strings.HasSuffix(tc.name, "q") && !strings.Contains(ui.notice, "press q again to stop driving it and quit") {
				t.Errorf("the first q does not say what quitting stops: notice %q", ui.notice)
			}
			_, cmd := ui.Update(tc.key)
			if !quits(cmd) {
				t.Fatalf("%s does not quit", tc.name)
			}
			if ctxs[0].Err() == nil {
				t.Errorf("%s quit, and the drive's context is not cancelled", tc.name)
			}
		})
	}
}

// quits reports whether cmd ends the program.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		return slices.ContainsFunc(msg, quits)
	}
	return false
}

// TestNoDriveAfterQuit: a drive confirmed after the program quit (its message was on
// its way) starts nothing, since nothing would stop it.
func TestNoDriveAfterQuit(t *testing.T) {
	d := &tuitest.Driver{}
	ui := driverUI(t, true, d)
	if _, cmd := ui.Update(tuitest.Typed("q")[0]); !quits(cmd) {
		t.Fatal("q does not quit")
	}
	drive(ui, common.ConfirmedMsg{Request: action.DriveRequest("worker", fixture.WorkerNew, 2, 3, "mcotui/mcotui-controller")})
	if pools, _ := d.Driven(); len(pools) != 0 || ui.drive != nil {
		t.Fatalf("a drive confirmed after quitting drove %v", pools)
	}
}

// TestDriveFailureSaysItOnce: when the Driver refuses (another terminal holds the
// Lease), the footer shows its error once, as it names the pool, and what to do.
func TestDriveFailureSaysItOnce(t *testing.T) {
	d := &tuitest.Driver{Err: fmt.Errorf("drive pool worker: %w by mcotui-tui@other:42 (mcotui/mcotui-controller): it drives the rollout", errors.New("the lease is held"))}
	ui := driverUI(t, true, d)
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"), tuitest.Typed("y"))...)
	settle(ui, func() bool { return ui.drive == nil })
	want := "drive pool worker: the lease is held by mcotui-tui@other:42 (mcotui/mcotui-controller): it drives the rollout; not driving: D tries again"
	if ui.drive != nil || ui.notice != want || !ui.noticeErr {
		t.Fatalf("drive %+v, notice %q (error %t), want the error %q", ui.drive, ui.notice, ui.noticeErr, want)
	}
}

// TestDriveReportsAfterQuit: a Driver that goes on reporting after the program quit
// (nobody reads its reports any more) is not blocked: it sees its context end and
// returns, releasing the Lease, as its caller's wait needs.
func TestDriveReportsAfterQuit(t *testing.T) {
	many := make([]action.DriveReport, 64) // more than the reports channel holds
	for i := range many {
		many[i] = action.DriveReport{Err: fmt.Errorf("report %d", i)}
	}
	d := &tuitest.Driver{Reports: many}
	ui := driverUI(t, true, d)
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("D"), tuitest.Typed("y"))...)
	if _, cmd := ui.Update(ctrl('c')); !quits(cmd) {
		t.Fatal("ctrl+c does not quit")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, stopped := d.Driven(); stopped == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Driver is still blocked reporting to a program that quit")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPreviewStartChecksTheLease: the preview's start (P, then enter) proposes targets
// only once the Lease is seen free: a controller holding it fills each freed slot
// itself, and both writing would overrun maxUnavailable.
func TestPreviewStartChecksTheLease(t *testing.T) {
	d := &tuitest.Driver{HeldBy: "mcotui-controller-7f9c4d-x2x5q"}
	ui := driverUI(t, true, d)
	drive(ui, tuitest.Seq(poolAt(2), tuitest.Typed("P"), tuitest.Special(tea.KeyEnter))...)
	if got := confirmTitle(ui); got != "" {
		t.Fatalf("a confirmation %q opened while the controller holds the Lease", got)
	}
	if want := "held by mcotui-controller-7f9c4d-x2x5q, which rolls the pool out"; !strings.Contains(ui.notice, want) || !ui.noticeErr {
		t.Fatalf("notice %q, want an error saying %q", ui.notice, want)
	}
	if ui.dialog != nil {
		t.Error("the preview stays open after the refusal")
	}

	d.HeldBy = ""
	drive(ui, tuitest.Seq(tuitest.Typed("P"), tuitest.Special(tea.KeyEnter))...)
	if got := confirmTitle(ui); got != "Start the rollout of pool worker" {
		t.Fatalf("Lease free: confirmation %q, notice %q", got, ui.notice)
	}
}
