package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestStatusAgreesWithPools: in every fixture state, the status line's "N updating M
// degraded" are live, the nodes the grid draws updating and degraded, and the pools
// pane's NOW column summed; the pools' DEGRADED# (their status, which lags) either sums
// to the same or the lagging pool's cell is starred and the status line says its
// status is behind. A drain waiting on a budget is updating, not degraded, until the
// agent gives up on it.
func TestStatusAgreesWithPools(t *testing.T) {
	small := fixture.Small()
	states := []struct {
		name       string
		events     []model.Event
		consistent bool // the pools' status counts what the nodes say
	}{
		{"small", small, true},
		{"small, the waiting drain gives up", append(append([]model.Event{}, small...), degradeWaiting(small)...), true},
		{"small, the pool's status not yet counting the waiting drain's failure", append(append([]model.Event{}, small...), nodesOnly(degradeWaiting(small))...), false},
		// Seen in the demo: UPDATED# 2 beside 5 workers done at the new config, unmarked.
		{"small, the pool's status not yet counting nodes done", append(append([]model.Event{}, small...), poolUpdatedLags(small, "worker", 2)...), false},
	}
	large := fixture.Large(300)
	for v := range 4 {
		large = append(large, fixture.Burst(300, v)...)
		states = append(states, struct {
			name       string
			events     []model.Event
			consistent bool
		}{fmt.Sprintf("large, burst %d", v), append([]model.Event{}, large...), false})
	}
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			ui := New(model.NewChanSource(fixture.Info, st.events, 1), Options{Clock: fixture.Clock(fixture.Now), Refresh: -1, NoticeTimeout: -1})
			drive(ui, tea.WindowSizeMsg{Width: 200, Height: 60})
			status := tuitest.Plain(ui.statusView())
			updating, degraded := statusCounts(t, status)
			cols, starred := poolColumns(t, tuitest.Plain(ui.pools.View()), len(ui.c.Store.Pools()))
			now, degN, updN := cols["NOW"], cols["DEGRADED#"], cols["UPDATED#"]
			if updating != now {
				t.Errorf("status line says %d updating; the pools' NOW sum to %d", updating, now)
			}
			drawn, done := 0, 0
			ui.c.Store.Each(func(n *model.Node) {
				if n.Degraded {
					drawn++
				}
				if n.Done() {
					done++
				}
			})
			if drawn != degraded {
				t.Errorf("%d nodes drawn degraded, the status line counts %d", drawn, degraded)
			}
			behind := strings.Contains(status, "status behind")
			if degN != degraded && (!starred["DEGRADED#"] || !behind) {
				t.Errorf("the pools' DEGRADED# sum to %d beside %d degraded nodes, and nothing says their status is behind (starred %v, status line %q)", degN, degraded, starred, status)
			}
			if updN != done && (!starred["UPDATED#"] || !behind) {
				t.Errorf("the pools' UPDATED# sum to %d beside %d nodes done at their pool's target, and nothing says their status is behind (starred %v, status line %q)", updN, done, starred, status)
			}
			if st.consistent && (behind || len(starred) > 0 || degN != degraded || updN != done) {
				t.Errorf("pools up to date with their nodes, yet: DEGRADED# %d (%d drawn), UPDATED# %d (%d done), starred %v, status line %q", degN, degraded, updN, done, starred, status)
			}
			if !st.consistent && strings.HasPrefix(st.name, "small") && !behind {
				t.Errorf("worker's status lags its nodes; the status line does not say so: %q", status)
			}
			if !st.consistent && strings.HasPrefix(st.name, "small") {
				// At 80 columns UPDATED#, MACHINES and DEGRADED# are gone: the lagging
				// pool's row must still be marked where its counts are shown.
				drive(ui, tea.WindowSizeMsg{Width: 80, Height: 24})
				// Nor may the status line's mark push the connection's state off it
				// ("conne…" it was).
				if s := tuitest.Plain(ui.statusView()); !strings.Contains(s, " connected ") || !strings.Contains(s, "behind") {
					t.Errorf("at 80x24 the status line does not say both connected and behind: %q", s)
				}
				for _, l := range strings.Split(tuitest.Plain(ui.pools.View()), "\n") {
					if f := strings.Fields(l); len(f) > 0 && f[0] == "worker" && !strings.Contains(l, "*") {
						t.Errorf("at 80x24 the worker pool's row has no mark of its status lagging: %q", l)
					}
				}
			}
			if w := ui.c.Store.Node(fixture.WaitingNode); st.name == "small" && (w.Degraded || !w.Updating) {
				t.Errorf("the waiting drain: degraded %v updating %v", w.Degraded, w.Updating)
			}
		})
	}
}

// degradeWaiting is the agent giving up on WaitingNode's drain (the drain timeout), and
// MCO's pool controller counting it, as they write it.
func degradeWaiting(small []model.Event) []model.Event {
	var out []model.Event
	for _, e := range small {
		switch {
		case e.Kind == model.KindNode && e.Node.Name == fixture.WaitingNode:
			n := e.Node.DeepCopy()
			n.Annotations[nodeanno.StateKey] = nodeanno.StateDegraded
			out = append(out, model.NodeEvent(n))
		case e.Kind == model.KindMCN && e.MCN.Name == fixture.WaitingNode:
			m := e.MCN.DeepCopy()
			m.Status.Conditions, _ = phase.Apply(m.Status.Conditions, m.Spec.ConfigVersion.Desired, metav1.NewTime(fixture.Now),
				phase.Degraded(fixture.WaitingNode, fmt.Errorf("failed to drain node after 1h")))
			out = append(out, model.MCNEvent(m))
		case e.Kind == model.KindPool && e.Pool.Name == "worker":
			p := e.Pool.DeepCopy()
			p.Status.DegradedMachineCount = 1
			out = append(out, model.PoolEvent(p))
		}
	}
	return out
}

// poolUpdatedLags is pool's status counting by fewer nodes updated than it has: the
// pool controller has not yet synced the nodes that finished.
func poolUpdatedLags(ev []model.Event, pool string, by int32) []model.Event {
	var out []model.Event
	for _, e := range ev {
		if e.Kind == model.KindPool && e.Pool.Name == pool {
			p := e.Pool.DeepCopy()
			p.Status.UpdatedMachineCount = max(0, p.Status.UpdatedMachineCount-by)
			out = append(out, model.PoolEvent(p))
		}
	}
	return out
}

// nodesOnly drops the pool events of ev: the nodes' change before the pool
// controller has counted it.
func nodesOnly(ev []model.Event) []model.Event {
	var out []model.Event
	for _, e := range ev {
		if e.Kind != model.KindPool {
			out = append(out, e)
		}
	}
	return out
}

var statusRE = regexp.MustCompile(`(\d+) updating  (\d+) degraded`)

func statusCounts(t *testing.T, line string) (updating, degraded int) {
	t.Helper()
	m := statusRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no counts in the status line %q", line)
	}
	u, _ := strconv.Atoi(m[1])
	d, _ := strconv.Atoi(m[2])
	return u, d
}

// poolColumns sums the NOW, UPDATED# and DEGRADED# columns of the pools pane as drawn:
// its first pools rows, under the title and header (the notes of the selected pool
// follow them), and says which columns have a starred cell (the pool's status is behind
// its nodes).
func poolColumns(t *testing.T, view string, pools int) (sums map[string]int, starred map[string]bool) {
	t.Helper()
	lines := strings.Split(view, "\n")
	header := lines[1]
	cell := func(line, title string) int {
		// Columns are found by their place in runes: the progress bar's cells are one
		// rune and one column each, where its bytes are three.
		i := strings.Index(header, title)
		if i < 0 {
			t.Fatalf("no %s column in %q", title, header)
		}
		i = utf8.RuneCountInString(header[:i])
		runes := []rune(line)
		if i >= len(runes) {
			t.Fatalf("%s of %q: the line ends before the column", title, line)
		}
		f := strings.Fields(string(runes[i:]))[0]
		if s, ok := strings.CutSuffix(f, "*"); ok {
			starred[title], f = true, s
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s of %q: %v", title, line, err)
		}
		return n
	}
	sums, starred = map[string]int{}, map[string]bool{}
	for _, l := range lines[2 : 2+pools] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		for _, title := range []string{"NOW", "UPDATED#", "DEGRADED#"} {
			sums[title] += cell(l, title)
		}
	}
	return sums, starred
}
