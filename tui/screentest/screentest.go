// Package screentest keeps the last screen a Bubble Tea program drew, for tests that
// run the real program (teatest) and wait for what a user would see. It is not
// internal because the command tests (cmd/...) use it too; only tests import it.
package screentest

import (
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Screen wraps a program's root model to keep the last screen it drew, as plain text,
// for a test that runs the real program (teatest) to wait on: the byte stream teatest
// offers holds only the cells that changed since the last frame, so a text on screen
// may never appear in it whole. Screen also remembers whether any frame showed one of
// the texts it watches, however briefly. Run the program on the Screen, not on the
// model it wraps.
type Screen struct {
	model tea.Model
	watch []string

	mu   sync.Mutex
	last string
	seen map[string]bool
}

// NewScreen wraps m, remembering the frames that show any of watch.
func NewScreen(m tea.Model, watch ...string) *Screen {
	return &Screen{model: m, watch: watch, seen: map[string]bool{}}
}

// Model is the model wrapped, as the last Update left it: read it once the program has
// ended.
func (s *Screen) Model() tea.Model { return s.model }

// Init implements tea.Model.
func (s *Screen) Init() tea.Cmd { return s.model.Init() }

// Update implements tea.Model.
func (s *Screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := s.model.Update(msg)
	s.model = m
	return s, cmd
}

// View implements tea.Model: it is called for every frame drawn.
func (s *Screen) View() tea.View {
	v := s.model.View()
	text := ansi.Strip(v.Content)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = text
	for _, w := range s.watch {
		if strings.Contains(text, w) {
			s.seen[w] = true
		}
	}
	return v
}

// Last is the last screen drawn, as plain text.
func (s *Screen) Last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Seen reports whether any screen drawn so far showed text, one of those watched.
func (s *Screen) Seen(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[text]
}

// WaitFor waits until the screen shows text, for up to a minute (a loaded machine
// running the real program, and an API server behind it, is slow), and fails the test
// with the screen it shows if it never does.
func (s *Screen) WaitFor(t testing.TB, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		last := s.Last()
		if strings.Contains(last, text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q; it shows:\n%s", text, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ tea.Model = (*Screen)(nil)
