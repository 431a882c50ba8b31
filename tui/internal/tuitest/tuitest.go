// Package tuitest is what the TUI's tests share: a Common over a fixture with a stopped
// clock, and golden files. Importing it registers the -update flag (through
// x/exp/golden) in every test binary of tui/..., so that `go test ./tui/... -update`
// refreshes every golden file at once. Only tests import it.
package tuitest

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/keys"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// Common returns what panes share, over a store holding events, with the clock stopped
// at fixture.Now.
func Common(color bool, events []model.Event) *common.Common {
	s := model.NewStore()
	s.Apply(events)
	return &common.Common{
		Styles: styles.New(color),
		Keys:   keys.Default(),
		Clock:  fixture.Clock(fixture.Now),
		Store:  s,
	}
}

// Golden compares a view, without its styles, with testdata/<test name>.golden: the
// layout and text, in a file that reads as the screen does in any viewer.
func Golden(t *testing.T, view string) {
	t.Helper()
	golden.RequireEqual(t, ansi.Strip(view))
}

// GoldenStyled compares a view with its escape sequences with
// testdata/<test name>.golden; `cat` shows the file as the terminal would.
func GoldenStyled(t *testing.T, view string) {
	t.Helper()
	golden.RequireEqual(t, view)
}

// Plain strips styles, for assertions on text.
func Plain(s string) string { return ansi.Strip(s) }
