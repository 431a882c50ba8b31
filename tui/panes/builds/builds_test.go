package builds_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/builds"
)

// TestBuildsView: the pane at several widths, worker's failed build selected first,
// no line wider than the pane.
func TestBuildsView(t *testing.T) {
	for _, w := range []int{200, 120, 80, 60} {
		t.Run(fmt.Sprintf("w%d", w), func(t *testing.T) {
			c := tuitest.Common(true, fixture.SmallWithBuilds())
			m := builds.New(c)
			m.SetSize(w, 30)
			v := m.View()
			tuitest.Golden(t, v)
			if m.Selected() != fixture.FailedBuild {
				t.Errorf("selected %q first, want the failed build %s", m.Selected(), fixture.FailedBuild)
			}
			for i, l := range strings.Split(v, "\n") {
				if n := len([]rune(tuitest.Plain(l))); n > w {
					t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
				}
			}
		})
	}
}

// TestBuildsWithoutImageMode: a cluster without MachineOSConfigs or OSImageStream (or
// whose CRDs predate them) says so rather than drawing empty tables.
func TestBuildsWithoutImageMode(t *testing.T) {
	c := tuitest.Common(false, fixture.SmallOpenShift())
	m := builds.New(c)
	m.SetSize(120, 20)
	v := tuitest.Plain(m.View())
	for _, want := range []string{"No MachineOSConfig: no pool is in image mode", "No OSImageStream/cluster"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	if m.Selected() != "" {
		t.Errorf("selected %q with no build", m.Selected())
	}
}

// TestBuildsLogKeepsTheEnd: the pane keeps the last MaxLogLines of a followed log and
// shows its end; lines of another build's log are not mixed in; control sequences in
// a builder's output are not drawn.
func TestBuildsLogKeepsTheEnd(t *testing.T) {
	c := tuitest.Common(false, fixture.SmallWithBuilds())
	m := builds.New(c)
	m.SetSize(100, 24)
	m.SetLog(fixture.FailedBuild, "pod "+fixture.BuilderPod+", container image-build", "(following)", false)
	var lines []string
	for i := range builds.MaxLogLines + 10 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	m.AppendLog(fixture.FailedBuild, lines)
	m.AppendLog(fixture.RunningBuild, []string{"not this build's"})
	m.AppendLog(fixture.FailedBuild, []string{"\x1b[2J\x1b[31mred\x1b[0m and a\tTAB"})
	v := tuitest.Plain(m.View())
	for _, want := range []string{"Log of pod " + fixture.BuilderPod, fmt.Sprintf("line %d", builds.MaxLogLines+9), "red and a TAB"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	for _, not := range []string{"not this build's", "\x1b[2J"} {
		if strings.Contains(m.View(), not) {
			t.Errorf("%q drawn:\n%s", not, v)
		}
	}
}

// TestBuildsSelectByPool: a MachineOSConfig's (its pool's) name selects its newest
// build; an unknown name selects nothing.
func TestBuildsSelectByPool(t *testing.T) {
	c := tuitest.Common(false, fixture.SmallWithBuilds())
	m := builds.New(c)
	m.SetSize(100, 24)
	if !m.Select("infra") || m.Selected() != fixture.RunningBuild {
		t.Errorf("Select(infra) selected %q, want %s", m.Selected(), fixture.RunningBuild)
	}
	if !m.Select("worker") || m.Selected() != fixture.FailedBuild {
		t.Errorf("Select(worker) selected %q, want its newest build %s", m.Selected(), fixture.FailedBuild)
	}
	if m.Select("nosuch") {
		t.Error("Select(nosuch) found something")
	}
}

// TestBuildsUnreadable: resources the session's identity may not read are named, not
// shown as none.
func TestBuildsUnreadable(t *testing.T) {
	c := tuitest.Common(false, fixture.SmallOpenShift())
	c.Info.Unreadable = []string{"machineosbuilds", "osimagestreams"}
	m := builds.New(c)
	m.SetSize(120, 20)
	v := tuitest.Plain(m.View())
	for _, want := range []string{"may not list and watch machineosbuilds", "may not list and watch osimagestreams"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	if strings.Contains(v, "No OSImageStream/cluster") {
		t.Errorf("an unreadable OSImageStream shown as none:\n%s", v)
	}
}

// TestBuildsCurrentImage: the succeeded build whose digest is its MachineOSConfig's
// current image says that its pool's nodes get it.
func TestBuildsCurrentImage(t *testing.T) {
	c := tuitest.Common(false, fixture.SmallWithBuilds())
	m := builds.New(c)
	m.SetSize(200, 40)
	if !m.Select(fixture.SucceededBuild) {
		t.Fatal("no succeeded build")
	}
	v := strings.Join(strings.Fields(tuitest.Plain(m.View())), " ") // wrapped lines joined
	if !strings.Contains(v, fixture.BuiltDigest+" (the MachineOSConfig's current image: the pool's nodes get it)") {
		t.Errorf("the current image is not said:\n%s", v)
	}
}
