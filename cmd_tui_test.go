package main

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/creack/pty"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/platform/host/hosttest"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui"
	"github.com/mcotui/mcotui/tui/source"
)

func TestTUINeedsATerminal(t *testing.T) {
	code, _, errOut := runCmd(t)
	if code != exitUsage || !strings.Contains(errOut, "needs a terminal") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestTUIRefusesArguments(t *testing.T) {
	code, _, errOut := runCmd(t, "no-such-command")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "no-such-command"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestTUIHelp(t *testing.T) {
	code, out, _ := runCmd(t, "--help")
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
	env := kubeEnv(t)
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
		done <- run([]string{"--kubeconfig", env.KubeconfigPath, "--read-only"}, streams{in: tty, out: tty, err: &errOut})
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

// lastScreen wraps the TUI's root model to keep the last screen it drew, as text: the
// byte stream teatest sees holds only the cells that changed.
type lastScreen struct {
	*tui.UI
	mu   sync.Mutex
	last string
	seen map[string]bool // what any screen showed, of watch
	// watch are texts to remember having seen, however briefly.
	watch []string
}

func (s *lastScreen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := s.UI.Update(msg)
	return s, cmd
}

func (s *lastScreen) View() tea.View {
	v := s.UI.View()
	text := ansi.Strip(v.Content)
	s.mu.Lock()
	s.last = text
	for _, w := range s.watch {
		if strings.Contains(text, w) {
			s.seen[w] = true
		}
	}
	s.mu.Unlock()
	return v
}

func (s *lastScreen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if strings.Contains(last, text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q; it shows:\n%s", text, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTUIDrivesAPool: with no controller and no MCO, D and y in the TUI drive a pool's
// rollout through the driver main injects: the status line says the terminal drives
// it, never more than maxUnavailable nodes are unavailable, every node ends at the
// pool's config (written by mcotui-tui@HOST:PID), the footer says the pool is updated, and
// the Lease is released once the TUI has quit.
func TestTUIDrivesAPool(t *testing.T) {
	c := newRolloutCluster(t, "td", 3, nil)
	ctx := cmdContext(t)
	ns, err := c.env.CreateNamespace(ctx, "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	target := c.renderByHand(t)
	c.startAgent(t, 500*time.Millisecond)
	most := c.watchUnavailable(t)

	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	cluster, err := source.New(runCtx, c.env.Config, source.Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	if err := cluster.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	clients, err := kube.NewClients(c.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	driver := newTUIDriver(runCtx, clients, ns, slog.New(slog.DiscardHandler))
	sub := cluster.Subscribe()
	defer sub.Close()
	screen := &lastScreen{
		UI:    tui.New(sub, tui.Options{Actions: source.NewActions(cluster, "test"), Driver: driver, Refresh: -1}),
		seen:  map[string]bool{},
		watch: []string{" driving td "},
	}
	tm := teatest.NewTestModel(t, screen, teatest.WithInitialTermSize(160, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	for _, r := range ":pool td" {
		tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	tm.Send(tea.KeyPressMsg{Code: 'D', Text: "D"})
	screen.waitFor(t, "This terminal will drive the rollout of pool td while it stays open")
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	screen.waitFor(t, "pool td is updated: all 3 nodes run "+target)

	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	stop()
	driver.wait()

	screen.mu.Lock()
	sawDriving := screen.seen[" driving td "]
	screen.mu.Unlock()
	if !sawDriving {
		t.Error("the status line never said the terminal drives td")
	}
	if n, at := most(); n > 1 {
		t.Errorf("%d nodes unavailable at once (%s); maxUnavailable is 1", n, at)
	}
	if w := c.desiredConfigWriters(t); len(w) != 1 || !w[driver.identity] {
		t.Errorf("desiredConfig written by %v, want %s alone", w, driver.identity)
	}
	if !poolUpdated(c.getPool(t)) {
		t.Errorf("pool td is not Updated: %+v", c.getPool(t).Status)
	}
	if holder, held, err := controller.LeaseHolder(ctx, c.env.Kube, ns, controller.LeaseName, time.Now()); err != nil || held {
		t.Errorf("after the TUI quit: lease holder %q held %t err %v; want it released", holder, held, err)
	}
}
