package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
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
	mu  sync.Mutex
	out bytes.Buffer
}

func (tm *terminal) Write(p []byte) (int, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.Write(p)
}

func (tm *terminal) String() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
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
