package pools_test

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/pools"
)

func TestPoolsView(t *testing.T) {
	for _, w := range []int{200, 120, 80} {
		t.Run(strings.Repeat("w", 1)+itoa(w), func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			p := pools.New(c)
			p.SetFocused(true)
			p.SetScope("worker")
			p.SetSize(w, p.Height())
			v := p.View()
			tuitest.Golden(t, v)
			for i, l := range strings.Split(v, "\n") {
				if n := len([]rune(tuitest.Plain(l))); n > w {
					t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
				}
			}
		})
	}
}

func TestPoolsSelect(t *testing.T) {
	c := tuitest.Common(true, fixture.Small())
	p := pools.New(c)
	p.SetFocused(true)
	p.SetSize(120, p.Height())
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	p.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	cmd := p.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if cmd == nil {
		t.Fatal("no command")
	}
	if msg, ok := cmd().(common.SelectPoolMsg); !ok || msg.Pool != "worker" {
		t.Fatalf("enter: %#v", cmd())
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
