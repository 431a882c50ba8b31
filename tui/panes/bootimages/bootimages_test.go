package bootimages_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/bootimages"
)

// TestBootImagesView: the fixture's Partial mode, its conditions, and each MachineSet's
// boot image against the target, at several widths.
func TestBootImagesView(t *testing.T) {
	for _, w := range []int{200, 120, 80} {
		t.Run(fmt.Sprintf("w%d", w), func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			m := bootimages.New(c)
			m.SetSize(w, 30)
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

// TestBootImagesWithoutObjects: a cluster without MachineConfiguration/cluster,
// MachineSets or target images says so rather than drawing empty tables.
func TestBootImagesWithoutObjects(t *testing.T) {
	var ev []model.Event
	for _, e := range fixture.Small() {
		switch e.Kind {
		case model.KindMachineConfiguration, model.KindMachineSet, model.KindBootImages:
			continue
		}
		ev = append(ev, e)
	}
	c := tuitest.Common(false, ev)
	m := bootimages.New(c)
	m.SetSize(120, 20)
	v := tuitest.Plain(m.View())
	for _, want := range []string{"No MachineConfiguration/cluster", "(not set: the platform's default)", "no target images", "no Machine API MachineSets"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	tuitest.Golden(t, m.View())
}
