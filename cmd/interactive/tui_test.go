package interactive

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/creack/pty"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/host/hosttest"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/screentest"
	"github.com/mcotui/mcotui/tui/source"
)

func TestTUINeedsATerminal(t *testing.T) {
	code, _, errOut := mcotui.Cmd(t)
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "needs a terminal") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestTUIRefusesArguments(t *testing.T) {
	code, _, errOut := mcotui.Cmd(t, "no-such-command")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, `unknown command "no-such-command"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestTUIHelp(t *testing.T) {
	code, out, _ := mcotui.Cmd(t, "--help")
	for _, want := range []string{"--read-only", "--kubeconfig", "--context", "NO_COLOR", "mcotui serve"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--help lacks %q (exit %d)", want, code)
		}
	}
}

// terminal is the reading end of a pseudo-terminal, collecting what the program draws.
type terminal struct {
	hosttest.SyncBuffer
}

func (tm *terminal) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(ansi.Strip(tm.String()), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%s", text, ansi.Strip(tm.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// colour matches an SGR sequence that sets a foreground or background colour.
var colour = regexp.MustCompile(`\x1b\[(?:[0-9]+;)*(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9]+)*m`)

// TestTUIOnACluster opens `mcotui --read-only` in a real pseudo-terminal on the test
// control plane, with NO_COLOR set: the status line names the context and the kind of
// cluster and says read-only, nothing is drawn in colour, and q quits with status 0.
func TestTUIOnACluster(t *testing.T) {
	env := cluster.Env(t)
	t.Setenv("NO_COLOR", "1")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	screen := &terminal{}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				_, _ = screen.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()

	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- mcotui.Run([]string{"--kubeconfig", env.KubeconfigPath, "--read-only"}, cmdutil.IOStreams{In: tty, Out: tty, ErrOut: &errOut})
	}()
	screen.waitFor(t, "mcotui-managed")
	screen.waitFor(t, "read-only")
	screen.waitFor(t, "Pools")
	if m := colour.FindString(screen.String()); m != "" {
		t.Errorf("NO_COLOR is set, yet the TUI drew colour %q", m)
	}
	if _, err := ptmx.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("q did not quit the TUI")
	}
}

// TestTUIDrivesAPool: with no controller and no MCO, D and y in the TUI drive a pool's
// rollout through the driver main injects: the status line says the terminal drives
// it, never more than maxUnavailable nodes are unavailable, every node ends at the
// pool's config (written by mcotui-tui@HOST:PID), the footer says the pool is updated, and
// the Lease is released once the TUI has quit.
func TestTUIDrivesAPool(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "td", 3, nil)
	ctx := kubetest.Context(t)
	ns, err := c.Env.CreateNamespace(ctx, "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	target := c.RenderByHand(t)
	c.StartAgent(t, 500*time.Millisecond)
	most := c.WatchUnavailable(t)

	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	cluster, clients := tuiSource(runCtx, t, c)
	driver := newTUIDriver(runCtx, clients, ns, nil, slog.New(slog.DiscardHandler))
	sub := cluster.Subscribe()
	defer sub.Close()
	screen := screentest.NewScreen(tui.New(sub, tui.Options{Actions: source.NewActions(cluster, "test"), Driver: driver, Refresh: -1}), " driving td ")
	tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(160, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	for _, r := range ":pool td" {
		tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	tm.Send(tea.KeyPressMsg{Code: 'D', Text: "D"})
	screen.WaitFor(t, "This terminal will drive the rollout of pool td while it stays open")
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	screen.WaitFor(t, "pool td is updated: all 3 nodes run "+target)

	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	stop()
	driver.Wait()

	if !screen.Seen(" driving td ") {
		t.Error("the status line never said the terminal drives td")
	}
	if n, at := most(); n > 1 {
		t.Errorf("%d nodes unavailable at once (%s); maxUnavailable is 1", n, at)
	}
	if w := c.DesiredConfigWriters(t); len(w) != 1 || !w[driver.Identity()] {
		t.Errorf("desiredConfig written by %v, want %s alone", w, driver.Identity())
	}
	if !rollout.PoolUpdated(c.GetPool(t)) {
		t.Errorf("pool td is not Updated: %+v", c.GetPool(t).Status)
	}
	if holder, held, err := kube.LeaseHolder(ctx, c.Env.Kube, ns, install.LeaseName, time.Now()); err != nil || held {
		t.Errorf("after the TUI quit: lease holder %q held %t err %v; want it released", holder, held, err)
	}
}

// TestTUIQuitStopsTheDrive: quitting the TUI right after confirming a drive, or while
// it drives, stops the drive by itself, before TUIOptions.Run cancels its own context: the
// driver's wait, as TUIOptions.Run calls it once the program has ended, returns only once the
// drive has ended and released the Lease, and refuses a drive that comes after it. No
// agent updates the nodes, so the pool's rollout would never end on its own.
func TestTUIQuitStopsTheDrive(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "tq", 2, nil)
	ctx := kubetest.Context(t)
	ns, err := c.Env.CreateNamespace(ctx, "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	c.RenderByHand(t)
	cluster, clients := tuiSource(t.Context(), t, c)
	released := func(ctx context.Context, t *testing.T, when string) {
		t.Helper()
		if holder, held, err := kube.LeaseHolder(ctx, c.Env.Kube, ns, install.LeaseName, time.Now()); err != nil || held {
			t.Errorf("%s: lease holder %q held %t err %v; want it released", when, holder, held, err)
		}
	}
	for _, tc := range []struct {
		name    string
		driving bool // quit once the terminal holds the Lease and drives
	}{{"q right after y", false}, {"q while driving", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := kubetest.Context(t)
			// Never cancelled before wait: what stops the drive is the TUI quitting.
			driver := newTUIDriver(t.Context(), clients, ns, nil, slog.New(slog.DiscardHandler))
			sub := cluster.Subscribe()
			defer sub.Close()
			screen := screentest.NewScreen(tui.New(sub, tui.Options{Actions: source.NewActions(cluster, "test"), Driver: driver, Refresh: -1}))
			tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(160, 40),
				teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
			for _, r := range ":pool tq" {
				tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
			}
			tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
			tm.Send(tea.KeyPressMsg{Code: 'D', Text: "D"})
			screen.WaitFor(t, "This terminal will drive the rollout of pool tq while it stays open")
			tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
			if tc.driving {
				screen.WaitFor(t, " driving tq ")
				if holder, held, err := kube.LeaseHolder(ctx, c.Env.Kube, ns, install.LeaseName, time.Now()); err != nil || !held || holder != driver.Identity() {
					t.Fatalf("while driving: lease holder %q held %t err %v; want %s", holder, held, err, driver.Identity())
				}
			}
			// While it drives, the first q at the top (esc widens the grid from the
			// pool first, as q would) says what quitting stops; the second quits.
			tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
			tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
			tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
			tm.WaitFinished(t, teatest.WithFinalTimeout(30*time.Second))

			waited := make(chan struct{})
			go func() {
				driver.Wait()
				close(waited)
			}()
			select {
			case <-waited:
			case <-ctx.Done():
				t.Fatal("the TUI quit, and what it drove did not stop: wait never returned")
			}
			released(ctx, t, "once wait returned")
			err := driver.Drive(t.Context(), "tq", func(action.DriveReport) {})
			if err == nil || !strings.Contains(err.Error(), "drive pool tq: the session has ended") {
				t.Errorf("a drive after wait: %v; want it refused", err)
			}
			released(ctx, t, "after a drive refused")
		})
	}
}

// TestTUIDriverDefaultNamespace: a caller that names no namespace (the demo) drives on
// mcotui's controller's Lease in its default namespace, which the confirmation names.
func TestTUIDriverDefaultNamespace(t *testing.T) {
	d := newTUIDriver(t.Context(), nil, "", nil, slog.New(slog.DiscardHandler))
	if got, want := d.Lease(), install.Namespace+"/"+install.LeaseName; got != want {
		t.Errorf("Lease() = %q, want %q", got, want)
	}
}

// tuiSource is what TUIOptions.Run builds on the cluster: a synced informer source, closed when
// the test ends, and clients to act with. ctx bounds the source's life.
func tuiSource(ctx context.Context, t *testing.T, c *cmdtest.RolloutCluster) (*source.Cluster, *kube.Clients) {
	t.Helper()
	cluster, err := source.New(ctx, c.Env.Config, source.Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	if err := cluster.WaitForSync(kubetest.Context(t)); err != nil {
		t.Fatal(err)
	}
	clients, err := kube.NewClients(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cluster, clients
}

// TestTUIDriveSaysWhoHoldsTheLease: with the Lease held (here by a controller of
// another process, renewed just now), D says who holds it and asks nothing: a drive
// would only wait for the holder. Nothing is written to the pool's nodes.
func TestTUIDriveSaysWhoHoldsTheLease(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "tl", 1, nil)
	ctx := kubetest.Context(t)
	ns, err := c.Env.CreateNamespace(ctx, "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	c.RenderByHand(t)
	const holder = "mcotui-controller-7f9c4d-x2x5q"
	now := metav1.NewMicroTime(time.Now())
	if _, err := c.Env.Kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.LeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	cluster, clients := tuiSource(runCtx, t, c)
	driver := newTUIDriver(runCtx, clients, ns, nil, slog.New(slog.DiscardHandler))
	sub := cluster.Subscribe()
	defer sub.Close()
	const confirmation = "This terminal will drive the rollout"
	screen := screentest.NewScreen(tui.New(sub, tui.Options{Actions: source.NewActions(cluster, "test"), Driver: driver, Refresh: -1}), confirmation)
	tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(200, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	for _, r := range ":pool tl" {
		tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	tm.Send(tea.KeyPressMsg{Code: 'D', Text: "D"})
	screen.WaitFor(t, "is held by "+holder)
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	stop()
	driver.Wait()
	if screen.Seen(confirmation) {
		t.Error("the drive's confirmation opened while the Lease was held")
	}
	if w := c.DesiredConfigWriters(t); w[driver.Identity()] {
		t.Errorf("desiredConfig written by %v with the Lease held by %s", w, holder)
	}
}
