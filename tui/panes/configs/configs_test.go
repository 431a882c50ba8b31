package configs_test

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/configs"
)

func TestConfigsView(t *testing.T) {
	for _, pool := range []string{"master", "worker", "infra"} {
		for _, w := range []int{120, 80} {
			t.Run(fmt.Sprintf("%s/w%d", pool, w), func(t *testing.T) {
				c := tuitest.Common(true, fixture.Small())
				m := configs.New(c)
				m.SetPool(pool)
				m.SetSize(w, 20)
				v := m.View()
				tuitest.Golden(t, v)
				for i, l := range strings.Split(v, "\n") {
					if n := len([]rune(tuitest.Plain(l))); n > w {
						t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
					}
				}
			})
		}
	}
}

// TestDiffPredictsActions: d diffs the pool's current config with the selected one and
// predicts what each pool's change does under MCO's default node disruption policy.
func TestDiffPredictsActions(t *testing.T) {
	for pool, want := range map[string][]string{
		"worker": {"~ /etc/containers/policy.json", "actions Reload crio.service", "drain   no"},
		"master": {"~ /etc/chrony.conf", "+ /etc/sysctl.d/99-net.conf", "actions Reboot", "drain   yes", "no policy matches: reboot"},
		"infra":  {"~ /etc/containers/registries.conf", "actions Special", "drain   yes"},
	} {
		c := tuitest.Common(false, fixture.Small())
		m := configs.New(c)
		m.SetPool(pool)
		m.SetSize(120, 30)
		m.Update(tea.KeyPressMsg{Code: 'd', Text: "d"})
		posted := c.TakePosted()
		if len(posted) != 1 {
			t.Fatalf("%s: posted %v", pool, posted)
		}
		d := posted[0].(common.OpenDialogMsg).Dialog.(*dialog.Document)
		d.SetSize(120, 40)
		v := tuitest.Plain(d.View())
		for _, w := range want {
			if !strings.Contains(v, w) {
				t.Errorf("%s: the diff lacks %q:\n%s", pool, w, v)
			}
		}
	}
}
