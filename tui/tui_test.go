package tui

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// sizes are the terminal sizes every screen is checked at.
var sizes = []struct{ w, h int }{{120, 40}, {200, 60}, {80, 24}}

// scenario is a screen to reach from the start, by keys and messages.
type scenario struct {
	name    string
	input   []tea.Msg
	noColor bool
	// managed is a cluster mcotui runs (every action offered); otherwise MCO runs it.
	managed bool
	// readOnly opens the session read-only.
	readOnly bool
	// driver gives the session a Driver (tuitest.Driver), so that it offers driving.
	driver bool
	// events gives the session fixture.Events to read.
	events bool
	// title is the terminal title to wait for before quitting, when the input reaches
	// its screen through a command (a pane's message to the root), which the program
	// runs concurrently with the quit.
	title string
	// narration is sent on Options.Narration before the program starts, oldest first.
	narration []string
	// shows is text to wait for before quitting, when the screen reaches it through a
	// command other than a pane's (the narration's).
	shows string
	// openshift is the fixture as on OpenShift (fixture.SmallOpenShift): 40-character
	// node names, cordoned by MCO's drain controller.
	openshift bool
	// stale: the waiting drain has failed, and the worker pool's status does not yet
	// count it.
	stale bool
	// pods gives the session fixturePods to read.
	pods bool
	// behind: the worker pool's status counts 2 updated nodes fewer than are done
	// (with openshift, the OpenShift fixture), and the kubeconfig's context is named as
	// `oc login` names it.
	behind bool
}

// ocContext is a kubeconfig context as `oc login` names it: namespace, API server, user.
const ocContext = "default/api-ci-ln-ds73n5t-72292-9xsm9-origin-ci-int-aws-dev-rhcloud-com:6443/kube:admin"

func ctrl(r rune) tea.Msg { return tea.KeyPressMsg{Code: r, Mod: tea.ModCtrl} }

// pools focuses the pools pane and selects the pool at index i (infra, master, worker).
func poolAt(i int) []tea.Msg {
	return tuitest.Seq(tuitest.Special(tea.KeyTab), tuitest.Typed(strings.Repeat("j", i)))
}

// scenarios cover every pane and dialog on the fixture: a pool mid-rollout, a paused
// pool, a degraded node with a drain blocked by a PodDisruptionBudget, boot images in
// Partial mode.
var scenarios = []scenario{
	{name: "grid"},
	{name: "grid-no-color", noColor: true},
	{name: "pools-focused", input: tuitest.Special(tea.KeyTab)},
	{name: "pool-paused", input: tuitest.Seq(tuitest.Typed(":pool infra"), tuitest.Special(tea.KeyEnter))},
	{name: "detail-blocked-drain", input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter)), title: "node " + fixture.BlockedNode},
	{name: "detail-blocked-drain-no-color", noColor: true, input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter)), title: "node " + fixture.BlockedNode},
	{name: "filter-prompt", input: tuitest.Typed("/phase:dr")},
	{name: "filter-error", input: tuitest.Seq(tuitest.Typed("/zone:a"), tuitest.Special(tea.KeyEnter))},
	{name: "sorted-by-phase", input: tuitest.Typed("ssS")},
	{name: "command-prompt", input: tuitest.Typed(":po")},
	{name: "help", input: tuitest.Typed("?")},
	{name: "help-managed", managed: true, input: tuitest.Typed("?")},
	{name: "help-read-only", readOnly: true, input: tuitest.Typed("?")},
	{name: "read-only-pause-does-nothing", readOnly: true, input: tuitest.Seq(poolAt(0), tuitest.Typed("p"))},

	// Boot images.
	{name: "bootimages", input: tuitest.Typed("b")},
	{name: "bootimages-read-only", readOnly: true, input: tuitest.Typed("b")},
	{name: "bootimages-no-color", noColor: true, input: tuitest.Typed("b")},
	{name: "bootimages-mode-dialog-no-color", noColor: true, input: tuitest.Typed("bm")},
	{name: "bootimages-mode-dialog", input: tuitest.Typed("bm")},
	{name: "bootimages-mode-all", input: tuitest.Seq(tuitest.Typed("bm"), tuitest.Special(tea.KeyTab))},
	{name: "bootimages-selector-editor", input: tuitest.Seq(tuitest.Typed("be"), []tea.Msg{ctrl('u')}, tuitest.Typed("machine.openshift.io/cluster-api-cluster=ci-ln-9xsm9"))},
	{name: "bootimages-selector-invalid", input: tuitest.Seq(tuitest.Typed("be"), []tea.Msg{ctrl('u')}, tuitest.Typed("a in (b"))},
	{name: "bootimages-confirm", input: tuitest.Seq(tuitest.Typed("bm"), tuitest.Special(tea.KeyTab, tea.KeyEnter)), title: "Set the boot image mode to All"},

	// Configs.
	{name: "configs", input: tuitest.Seq(tuitest.Typed(":configs worker"), tuitest.Special(tea.KeyEnter))},
	{name: "configs-diff", input: tuitest.Seq(tuitest.Typed(":configs worker"), tuitest.Special(tea.KeyEnter), tuitest.Typed("d")), title: "Diff of two rendered configs"},
	{name: "configs-diff-master", input: tuitest.Seq(tuitest.Typed(":configs master"), tuitest.Special(tea.KeyEnter), tuitest.Typed("d")), title: "Diff of two rendered configs"},

	// Pool actions.
	{name: "pause-confirm", input: tuitest.Seq(poolAt(2), tuitest.Typed("p"))},
	{name: "pause-confirm-no-color", noColor: true, input: tuitest.Seq(poolAt(2), tuitest.Typed("p"))},
	{name: "configs-no-color", noColor: true, input: tuitest.Seq(tuitest.Typed(":configs worker"), tuitest.Special(tea.KeyEnter))},
	{name: "resume-confirm", input: tuitest.Seq(poolAt(0), tuitest.Typed("p"))},
	{name: "maxunavailable-dialog", input: tuitest.Seq(poolAt(2), tuitest.Typed("m"), []tea.Msg{ctrl('u')}, tuitest.Typed("3"))},
	{name: "maxunavailable-invalid", input: tuitest.Seq(poolAt(2), tuitest.Typed("m"), []tea.Msg{ctrl('u')}, tuitest.Typed("-1"))},
	{name: "maxunavailable-confirm", input: tuitest.Seq(poolAt(2), tuitest.Typed("m"), []tea.Msg{ctrl('u')}, tuitest.Typed("3"), tuitest.Special(tea.KeyEnter)), title: "Set maxUnavailable of pool worker"},
	{name: "preview", input: tuitest.Seq(poolAt(2), tuitest.Typed("P"))},
	{name: "preview-managed", managed: true, input: tuitest.Seq(poolAt(1), tuitest.Typed("P"))},
	{name: "preview-paused", managed: true, input: tuitest.Seq(poolAt(0), tuitest.Typed("P"))},
	{name: "rollout-confirm", managed: true, input: tuitest.Seq(poolAt(2), tuitest.Typed("P"), tuitest.Special(tea.KeyEnter)), title: "Start the rollout of pool worker"},
	{name: "rollout-blocked", managed: true, input: tuitest.Seq(poolAt(1), tuitest.Typed("P"), tuitest.Special(tea.KeyEnter))},
	{name: "rollback-confirm", managed: true, input: tuitest.Seq(poolAt(2), tuitest.Typed("R"))},
	{name: "retry-confirm", managed: true, input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter), tuitest.Typed("r"))},
	{name: "retry-not-offered-on-mco", input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter), tuitest.Typed("r"))},
	{name: "drive-confirm", managed: true, driver: true, input: tuitest.Seq(poolAt(2), tuitest.Typed("D")), title: "Drive the rollout of pool worker"},
	{name: "help-managed-driver", managed: true, driver: true, input: tuitest.Typed("?")},

	// The states issue 12 names, and what a k9s user reaches for.
	{name: "detail-waiting-drain", events: true, input: tuitest.Seq(tuitest.Typed("/waiting"), tuitest.Special(tea.KeyEnter, tea.KeyEnter)), shows: "Events:"},
	{name: "detail-not-ready", input: tuitest.Seq(tuitest.Typed("/notready"), tuitest.Special(tea.KeyEnter, tea.KeyEnter)), title: "node " + fixture.RebootNode},
	{name: "filter-behind", input: tuitest.Seq(tuitest.Typed("/behind"), tuitest.Special(tea.KeyEnter))},
	{name: "filter-degraded", input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter))},
	{name: "yaml-node", input: tuitest.Seq(tuitest.Typed("/waiting"), tuitest.Special(tea.KeyEnter), tuitest.Typed("y")), title: "Node " + fixture.WaitingNode + " and its MachineConfigNode (YAML)"},
	{name: "yaml-pool", input: tuitest.Seq(poolAt(1), tuitest.Typed("y")), title: "MachineConfigPool master (YAML)"},
	{name: "describe-node", events: true, input: tuitest.Seq(tuitest.Typed("/waiting"), tuitest.Special(tea.KeyEnter), tuitest.Typed("d")), title: "Describe Node " + fixture.WaitingNode},
	{name: "describe-pool", events: true, input: tuitest.Seq(poolAt(1), tuitest.Typed("d")), title: "Describe MachineConfigPool master"},
	{name: "describe-no-events", input: tuitest.Seq(poolAt(1), tuitest.Typed("d")), title: "Describe MachineConfigPool master"},
	{name: "unbound-key", input: tuitest.Typed("z")},

	// OpenShift's names (issue 36): 40 characters, the first 33 shared. Each row must
	// still tell its node apart, in the grid and in the preview's waves.
	{name: "openshift-grid", openshift: true},
	{name: "openshift-preview", openshift: true, managed: true, input: tuitest.Seq(poolAt(2), tuitest.Typed("P"))},
	// From a blocked drain to the pod that holds it (issue 36).
	{name: "evict-blocking-pod-confirm", input: tuitest.Seq(tuitest.Typed("/degraded"), tuitest.Special(tea.KeyEnter, tea.KeyEnter), tuitest.Typed("v")), title: "Evict pod default/web-0"},
	// A degraded node beside a pool status that still says 0 degraded (issue 36).
	{name: "stale-pool-status", stale: true, input: poolAt(2)},
	// The status line with every piece it may carry, narrowed by priority: at 80 columns
	// the connection's state stays whole, the pool behind is named (issue 36).
	{name: "openshift-status-behind", openshift: true, behind: true},
	{name: "openshift-status-behind-read-only", openshift: true, behind: true, readOnly: true},
	{name: "openshift-detail-mco-cordoned", openshift: true, input: tuitest.Seq(tuitest.Typed("/gw5sd"), tuitest.Special(tea.KeyEnter, tea.KeyEnter)), title: "node " + fixture.OpenShiftName(fixture.DrainingNode)},

	// The embedder's narration (the demo's story): only the latest message shows, cut to
	// the width at 120 columns, whole at 200.
	{name: "narration", narration: storyLines, shows: "chronyd"},
	{name: "narration-no-color", noColor: true, narration: storyLines, shows: "chronyd"},
	{name: "narration-bootimages", input: tuitest.Typed("b"), narration: storyLines, shows: "chronyd"},

	// Image builds (issue 31): worker's failed build selected, the OS streams below.
	{name: "builds", openshift: true, input: tuitest.Seq([]tea.Msg{eventsMsg{events: fixture.Builds()}}, tuitest.Typed("i"))},
}

// storyLines are two steps of a story like the demo's; the second supersedes the first.
var storyLines = []string{
	"A calm cluster: every node runs its pool's rendered config. Press ? for every key",
	"New MachineConfig 99-worker-chrony: workers restart chronyd two at a time, without a drain or a reboot. Press enter on a node to follow it",
}

func newUI(noColor bool) (*UI, *model.ChanSource) {
	return newScenarioUI(scenario{noColor: noColor})
}

func newScenarioUI(sc scenario) (*UI, *model.ChanSource) {
	src := fixture.Source(16)
	if sc.managed {
		src = fixture.ManagedSource(16)
	}
	if sc.openshift {
		info := fixture.Info
		if sc.managed {
			info = fixture.ManagedInfo
		}
		src = model.NewChanSource(info, fixture.SmallOpenShift(), 16)
	}
	if sc.stale {
		small := fixture.Small()
		src = model.NewChanSource(fixture.Info, append(small, nodesOnly(degradeWaiting(small))...), 16)
	}
	if sc.behind {
		info, ev := fixture.Info, fixture.Small()
		if sc.openshift {
			ev = fixture.SmallOpenShift()
		}
		info.Context = ocContext
		src = model.NewChanSource(info, append(ev, poolUpdatedLags(ev, "worker", 2)...), 16)
	}
	opts := Options{Clock: fixture.Clock(fixture.Now), NoColor: sc.noColor, Refresh: -1, NoticeTimeout: -1, ReadOnly: sc.readOnly}
	opts.Actions = &tuitest.Actions{}
	if sc.driver {
		opts.Driver = &tuitest.Driver{}
	}
	if sc.events {
		opts.Events = tuitest.Events(fixture.Events())
	}
	if sc.pods {
		opts.Pods = fixturePods()
	}
	if sc.narration != nil {
		ch := make(chan string, len(sc.narration))
		for _, s := range sc.narration {
			ch <- s
		}
		opts.Narration = ch
	}
	return New(src, opts), src
}

// TestScreens drives the real program through teatest at fixed sizes, with the colour
// profile pinned (Bubble Tea would otherwise detect NoTTY in CI and strip colour) and
// the clock stopped, and compares the final screen, escape sequences and all, with
// testdata/TestScreens/<size>/<scenario>.golden. `cat` a golden file to see it.
func TestScreens(t *testing.T) {
	for _, size := range sizes {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%dx%d/%s", size.w, size.h, sc.name), func(t *testing.T) {
				t.Parallel()
				ui, src := newScenarioUI(sc)
				t.Cleanup(src.Close)
				profile := colorprofile.ANSI256
				if sc.noColor {
					profile = colorprofile.ASCII
				}
				tm := teatest.NewTestModel(t, ui,
					teatest.WithInitialTermSize(size.w, size.h),
					teatest.WithProgramOptions(
						tea.WithColorProfile(profile),
						tea.WithEnvironment([]string{"TERM=xterm-256color"}),
					))
				for _, msg := range sc.input {
					tm.Send(msg)
				}
				if sc.title != "" {
					teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
						return strings.Contains(string(b), "mcotui: "+sc.title+" @")
					}, teatest.WithDuration(10*time.Second))
				}
				if sc.shows != "" {
					teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
						return strings.Contains(string(b), sc.shows)
					}, teatest.WithDuration(10*time.Second))
				}
				if err := tm.Quit(); err != nil {
					t.Fatal(err)
				}
				final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*UI)
				view := final.View().Content
				checkShape(t, view, size.w, size.h)
				tuitest.GoldenStyled(t, view)
			})
		}
	}
}

// TestScreensPlain is TestScreens without a program: the same scenarios through Update
// and View directly, compared without styles. teatest v2 is experimental; these goldens
// keep the layout covered (and readable in review) if it breaks.
func TestScreensPlain(t *testing.T) {
	for _, size := range sizes {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%dx%d/%s", size.w, size.h, sc.name), func(t *testing.T) {
				ui, _ := newScenarioUI(sc)
				drive(ui, append([]tea.Msg{tea.WindowSizeMsg{Width: size.w, Height: size.h}}, sc.input...)...)
				if sc.narration != nil {
					readNarration(ui) // as the program does from Init
				}
				view := ui.View().Content
				checkShape(t, view, size.w, size.h)
				tuitest.Golden(t, view)
			})
		}
	}
}

// drive feeds msgs to the model as the program would, running the commands they return
// until what is left waits on the world (see runCmd).
func drive(ui *UI, msgs ...tea.Msg) {
	for _, msg := range msgs {
		_, cmd := ui.Update(msg)
		runCmd(ui, cmd, 0)
	}
}

// runCmd runs cmd as the program would, and the commands that the messages it yields
// return, depth levels deep, setting aside those that wait on the world (the source, the
// Driver, a timer: the UI marks them, UI.waits): they are not part of this frame, and
// settle takes their messages when a test waits for one. A command that neither ends
// nor marks a wait hangs the test, for go test's -timeout to name: there is no
// wall-clock budget for a loaded machine to miss.
func runCmd(ui *UI, cmd tea.Cmd, depth int) { runCmds(ui, cmd, depth, false) }

// runCmdThrough is runCmd that also waits for cmd itself (or, for a batch, for each of
// its commands) when it waits on the world: for a timer to fire.
func runCmdThrough(ui *UI, cmd tea.Cmd) { runCmds(ui, cmd, 0, true) }

func runCmds(ui *UI, cmd tea.Cmd, depth int, through bool) {
	if cmd == nil || depth > 4 {
		return
	}
	select { // a mark left by a command the test ran itself
	case <-ui.waiting:
	default:
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	if through {
		msg = <-done
	} else {
		select {
		case msg = <-done:
		case <-ui.waiting:
			waits.add(ui, done)
			return
		}
	}
	handle(ui, msg, depth, through)
}

func handle(ui *UI, msg tea.Msg, depth int, through bool) {
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			runCmds(ui, c, depth+1, through && depth == 0)
		}
	case nil:
	default:
		_, next := ui.Update(msg)
		runCmd(ui, next, depth+1)
	}
}

// settle waits, as the program would, for the commands runCmd set aside, handling each
// message as it comes, until done holds. It waits on progress only: if what the test
// waits for never comes, go test's -timeout names the test.
func settle(ui *UI, done func() bool) {
	for !done() {
		pending := waits.take(ui)
		if len(pending) == 0 {
			panic("settle: nothing is waiting, so nothing can change")
		}
		cases := make([]reflect.SelectCase, len(pending))
		for i, ch := range pending {
			cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
		}
		i, v, _ := reflect.Select(cases)
		waits.add(ui, append(pending[:i:i], pending[i+1:]...)...)
		handle(ui, v.Interface(), 0, false)
	}
}

// waits holds, per UI, the commands that runCmd set aside as waiting on the world.
var waits = pendingWaits{m: map[*UI][]chan tea.Msg{}}

type pendingWaits struct {
	mu sync.Mutex
	m  map[*UI][]chan tea.Msg
}

func (p *pendingWaits) add(ui *UI, chs ...chan tea.Msg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[ui] = append(p.m[ui], chs...)
}

func (p *pendingWaits) take(ui *UI) []chan tea.Msg {
	p.mu.Lock()
	defer p.mu.Unlock()
	chs := p.m[ui]
	delete(p.m, ui)
	return chs
}

// checkShape asserts the screen is exactly the terminal's size.
func checkShape(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := len([]rune(tuitest.Plain(l))); n > w {
			t.Errorf("line %d: %d cells, more than %d: %q", i, n, w, tuitest.Plain(l))
		}
	}
}

// TestBurstBatches: ten thousand MachineConfigNode updates pending on the source are
// drained in batches of burstBatch once the lists are in, so that a key pressed
// meanwhile waits for one batch, not the burst; every event reaches the store, in
// order, and none is left behind. While connecting, they are one message.
func TestBurstBatches(t *testing.T) {
	const n = 10000
	for _, connected := range []bool{true, false} {
		t.Run(map[bool]string{true: "connected", false: "connecting"}[connected], func(t *testing.T) {
			snap := fixture.Large(n)
			if !connected {
				snap = snap[:len(snap)-1] // no health yet: connecting
			}
			src := model.NewChanSource(fixture.Info, snap, 2*n)
			ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1})
			drive(ui, tea.WindowSizeMsg{Width: 200, Height: 60})
			burst := fixture.Burst(n, 0)
			src.Send(burst...)
			before := ui.c.Store.Node("worker-09999")
			var sizes []int
			for len(src.Events()) > 0 {
				msg := ui.waitForEvents()()
				em, ok := msg.(eventsMsg)
				if !ok {
					t.Fatalf("got %T, want an eventsMsg", msg)
				}
				if got := len(em.events); got == 0 || em.events[0] != burst[sum(sizes)] {
					t.Fatalf("batch %d: %d events, not the burst's next", len(sizes), got)
				}
				sizes = append(sizes, len(em.events))
				ui.Update(em)
			}
			want := []int{n}
			if connected {
				want = nil
				for k := 0; k < n; k += burstBatch {
					want = append(want, min(burstBatch, n-k))
				}
			}
			if !reflect.DeepEqual(sizes, want) {
				t.Fatalf("batches of %v, want %v", sizes, want)
			}
			if after := ui.c.Store.Node("worker-09999"); after == before {
				t.Fatal("the burst's last event did not reach the store")
			}
		})
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestCoalesceWindow: with Options.Coalesce, events that trickle in shortly after the
// first join its batch.
func TestCoalesceWindow(t *testing.T) {
	src := fixture.Source(16)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, Coalesce: 200 * time.Millisecond})
	burst := fixture.Burst(3, 0)
	go func() {
		for _, e := range burst {
			src.Send(e)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	em := ui.waitForEvents()().(eventsMsg)
	if len(em.events) != len(burst) {
		t.Fatalf("%d events in the batch, want %d", len(em.events), len(burst))
	}
}

// TestCoalesceListing: while the source is connecting, events gather for
// Options.CoalesceListing, and a health event ends the batch at once: the status line
// is not held back. The window is far longer than the test, which a batch that waited
// it out would not finish within.
func TestCoalesceListing(t *testing.T) {
	snap := fixture.Large(3)
	snap = snap[:len(snap)-1] // no health yet: connecting
	src := model.NewChanSource(fixture.Info, snap, 16)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, Coalesce: 0, CoalesceListing: time.Hour})
	if ui.c.Store.Health().State != model.Connecting {
		t.Fatalf("the source is %s, want connecting", ui.c.Store.Health().State)
	}
	burst := fixture.Burst(3, 0)
	connected := model.HealthEvent(model.Health{State: model.Connected, Since: fixture.Now})
	go func() {
		for _, e := range burst {
			src.Send(e)
			time.Sleep(10 * time.Millisecond)
		}
		src.Send(connected, burst[0])
	}()
	em := ui.waitForEvents()().(eventsMsg)
	if len(em.events) != len(burst)+1 || em.events[len(burst)].Kind != model.KindHealth {
		t.Fatalf("the batch is %d events (last %s), want the %d of the burst and the health", len(em.events), em.events[len(em.events)-1].Kind, len(burst))
	}
	ui.Update(em)
	// Connected: Coalesce (0) again, which takes only what is pending.
	em = ui.waitForEvents()().(eventsMsg)
	if len(em.events) != 1 {
		t.Fatalf("%d events after connected, want 1", len(em.events))
	}
}

// TestLiveEvents runs the program and changes the cluster under it: the blocked node's
// drain completes, and the source then stops.
func TestLiveEvents(t *testing.T) {
	ui, src := newUI(false)
	tm := teatest.NewTestModel(t, ui,
		teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI256), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab}) // anything, to be sure the program runs
	src.Send(model.HealthEvent(model.Health{State: model.Degraded, Err: "watch MachineConfigNodes: connection refused", Since: fixture.Now.Add(-30 * time.Second)}))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(string(b), "connection refused")
	}, teatest.WithDuration(5*time.Second))
	src.Close()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(string(b), "disconnected")
	}, teatest.WithDuration(5*time.Second))
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*UI)
	tuitest.Golden(t, final.View().Content)
}

// TestMouse: the wheel scrolls the pane under the pointer, a click selects a row there.
func TestMouse(t *testing.T) {
	src := model.NewChanSource(fixture.Info, fixture.Large(300), 1)
	ui := New(src, Options{Clock: fixture.Clock(fixture.Now), Refresh: -1})
	drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
	first := ui.grid.Selected().Name
	drive(ui, tea.MouseWheelMsg{X: 10, Y: 20, Button: tea.MouseWheelDown})
	drive(ui, tea.MouseWheelMsg{X: 10, Y: 20, Button: tea.MouseWheelDown})
	if got := ui.grid.Selected().Name; got == first {
		t.Fatalf("wheel did not move the grid: still %s", got)
	}
	// A click on the pools pane's second pool scopes the grid to it.
	drive(ui, tea.MouseClickMsg{X: 3, Y: 3, Button: tea.MouseLeft})
	if q := ui.grid.Query(); q.Pool != "master" {
		t.Fatalf("click on the second pool: grid shows pool %q", q.Pool)
	}
}

// TestResize: every size from tiny to large fills the terminal exactly.
func TestResize(t *testing.T) {
	ui, _ := newUI(false)
	for _, s := range []struct{ w, h int }{{200, 60}, {80, 24}, {40, 10}, {120, 40}, {20, 5}} {
		drive(ui, tea.WindowSizeMsg{Width: s.w, Height: s.h})
		checkShape(t, ui.View().Content, s.w, s.h)
	}
	drive(ui, tea.WindowSizeMsg{Width: 80, Height: 24})
	tuitest.Golden(t, ui.View().Content)
}
