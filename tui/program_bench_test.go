package tui

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// BenchmarkKeyInBurstProgram5000 is BenchmarkKeyInBurst5000 end to end, as
// BenchmarkTUIScale measures it but without the API server and tmux: the real program
// (Bubble Tea's input reader, message queue and renderer) on a pseudo-terminal at
// 200x60 over 5,000 nodes, with the coalescing window mcotui runs with. A burst of 1,000
// MachineConfigNode updates (the last 1,000 workers, off screen) is delivered 32 at a
// time, about as fast as a loaded API server sends them; halfway through, `?` is
// written to the terminal and key-ms is the time until the terminal has received the
// help overlay's frame. It includes the wait for the renderer's next tick (up to a
// frame at FPS).
func BenchmarkKeyInBurstProgram5000(b *testing.B) { benchKeyInBurstProgram(b, 5000) }

// BenchmarkKeyInBurstProgram15000 is BenchmarkKeyInBurstProgram5000 at 15,000 nodes,
// the size BenchmarkTUIScale runs at in make bench.
func BenchmarkKeyInBurstProgram15000(b *testing.B) { benchKeyInBurstProgram(b, 15000) }

func benchKeyInBurstProgram(b *testing.B, n int) {
	const burst, chunk = 1000, 32
	const gap = 20 * time.Millisecond // between chunks: 1,000 updates in about 0.6 s
	ptmx, tty, err := pty.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 60, Cols: 200}); err != nil {
		b.Fatal(err)
	}
	out := &screenLog{changed: make(chan struct{}, 1)}
	go out.readFrom(ptmx)

	src := model.NewChanSource(fixture.Info, fixture.Large(n), 1024)
	ui := New(src, Options{Coalesce: 30 * time.Millisecond, CoalesceListing: 100 * time.Millisecond})
	probe := &helpProbe{UI: ui}
	// A bound for a program that stops drawing, not a measure.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := tea.NewProgram(probe, tea.WithInput(tty), tea.WithOutput(tty), tea.WithContext(ctx),
		tea.WithEnvironment([]string{"TERM=xterm-256color"}), tea.WithFPS(FPS))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	defer func() {
		p.Quit()
		<-done
	}()
	if err := out.waitFor(ctx, fmt.Sprintf("%d/%d", n, n)); err != nil {
		b.Fatalf("the first frame never came: %v", err)
	}

	bursts := [2][]model.Event{fixture.Burst(n, 0)[n-burst:], fixture.Burst(n, 1)[n-burst:]}
	var keys []time.Duration
	i := 0
	for b.Loop() {
		ev := bursts[i%2]
		half := make(chan struct{})
		fed := make(chan struct{})
		go func() {
			defer close(fed)
			halfway := false
			for k := 0; k < len(ev); k += chunk {
				if k >= len(ev)/2 && !halfway {
					close(half)
					halfway = true
				}
				src.Send(ev[k:min(k+chunk, len(ev))]...)
				time.Sleep(gap)
			}
		}()
		<-half
		out.reset()
		pressed := time.Now()
		if _, err := ptmx.Write([]byte("?")); err != nil {
			b.Fatal(err)
		}
		// The frame's text, wherever the renderer skipped blank cells it left alone.
		if err := out.waitFor(ctx, "escor?toclose"); err != nil {
			b.Fatalf("the help overlay never came: %v", err)
		}
		keys = append(keys, time.Since(pressed))
		<-fed
		if _, err := ptmx.Write([]byte("?")); err != nil {
			b.Fatal(err)
		}
		for probe.open.Load() {
			if err := out.wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	slices.Sort(keys)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(keys[len(keys)/2]), "key-ms")
	b.ReportMetric(ms(keys[len(keys)-1]), "key-max-ms")
}

// helpProbe tells whether the help overlay is open, so that the benchmark knows when
// `?` closed it again.
type helpProbe struct {
	*UI
	open atomic.Bool
}

func (p *helpProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.UI.Update(msg)
	p.open.Store(p.showHelp)
	return p, cmd
}

// screenLog is what the program wrote to its terminal since the last reset.
type screenLog struct {
	mu      sync.Mutex
	buf     []byte
	changed chan struct{}
}

func (s *screenLog) readFrom(r interface{ Read([]byte) (int, error) }) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.buf = append(s.buf, buf[:n]...)
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *screenLog) reset() {
	s.mu.Lock()
	s.buf = s.buf[:0]
	s.mu.Unlock()
}

// wait returns when something more was written.
func (s *screenLog) wait(ctx context.Context) error {
	select {
	case <-s.changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitFor waits until the text written since the last reset, without escape sequences
// and spaces, holds text.
func (s *screenLog) waitFor(ctx context.Context, text string) error {
	want := []byte(text)
	for {
		s.mu.Lock()
		got := bytes.ReplaceAll([]byte(ansi.Strip(string(s.buf))), []byte(" "), nil)
		s.mu.Unlock()
		if bytes.Contains(got, want) {
			return nil
		}
		if err := s.wait(ctx); err != nil {
			return err
		}
	}
}
