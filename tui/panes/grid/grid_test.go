package grid_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/pinned"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/grid"
)

func newGrid(t testing.TB, w, h int) (*grid.Model, *common.Common) {
	c := tuitest.Common(true, fixture.Small())
	g := grid.New(c)
	g.SetFocused(true)
	g.SetSize(w, h)
	return g, c
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestGridView(t *testing.T) {
	for _, size := range []struct{ w, h int }{{120, 16}, {200, 16}, {80, 12}} {
		t.Run(sizeName(size.w, size.h), func(t *testing.T) {
			g, _ := newGrid(t, size.w, size.h)
			g.Update(key("down"))
			tuitest.Golden(t, g.View())
			checkShape(t, g.View(), size.w, size.h)
		})
	}
}

func TestGridSortAndFilter(t *testing.T) {
	g, _ := newGrid(t, 120, 14)
	g.Update(key("s")) // pool
	g.Update(key("s")) // phase
	g.Update(key("S")) // reversed: furthest along first
	f, err := model.ParseFilter("!done")
	if err != nil {
		t.Fatal(err)
	}
	q := g.Query()
	q.Filter = f
	g.SetQuery(q)
	tuitest.Golden(t, g.View())
}

func TestGridEmpty(t *testing.T) {
	g, _ := newGrid(t, 120, 6)
	f, _ := model.ParseFilter("nosuchnode")
	g.SetQuery(model.Query{Filter: f})
	tuitest.Golden(t, g.View())
}

func TestGridOpen(t *testing.T) {
	g, _ := newGrid(t, 120, 14)
	cmd := g.Update(key("enter"))
	if cmd == nil {
		t.Fatal("enter: no command")
	}
	if msg, ok := cmd().(common.OpenNodeMsg); !ok || msg.Name != "ci-ln-9xsm9-infra-a-m3x7v" {
		t.Fatalf("enter: %#v", cmd())
	}
}

// TestGridKeepsSelectionAcrossBursts: the selected node stays selected when a burst moves
// it, which is what lets an operator watch one node during a rollout.
func TestGridKeepsSelectionAcrossBursts(t *testing.T) {
	c := tuitest.Common(true, fixture.Large(500))
	g := grid.New(c)
	g.SetFocused(true)
	g.SetSize(200, 30)
	g.SetQuery(model.Query{Sort: model.SortPhase})
	for range 40 {
		g.Update(key("down"))
	}
	want := g.Selected().Name
	for v := range 5 {
		g.Sync(c.Store.Apply(fixture.Burst(500, v)))
		if got := g.Selected(); got == nil || got.Name != want {
			t.Fatalf("burst %d: selected %v, want %s", v, got, want)
		}
		checkShape(t, g.View(), 200, 30)
	}
}

func sizeName(w, h int) string {
	return strings.Join([]string{itoa(w), itoa(h)}, "x")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// checkShape asserts the view fills exactly its box: the root's layout relies on it.
func checkShape(t testing.TB, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := len([]rune(tuitest.Plain(l))); n > w {
			t.Fatalf("line %d is %d wide, more than %d: %q", i, n, w, tuitest.Plain(l))
		}
	}
}

// TestGridPinnedColumn: once a node reports pinned images, the PINNED column shows each
// node's progress; a failure reads "failed".
func TestGridPinnedColumn(t *testing.T) {
	g, c := newGrid(t, 200, 16)
	// The column's title is PINNED, or PIN where the grid takes short titles.
	hasPinned := func(view string) bool {
		header := strings.Fields(strings.Split(ansi.Strip(view), "\n")[1])
		return slices.Contains(header, "PINNED") || slices.Contains(header, "PIN")
	}
	if hasPinned(g.View()) {
		t.Fatal("PINNED column without pinned images")
	}
	var events []model.Event
	for i, name := range []string{"ci-ln-9xsm9-infra-a-m3x7v", "ci-ln-9xsm9-master-0"} {
		n := c.Store.Node(name)
		if n == nil || n.MCN == nil {
			t.Fatalf("fixture node %s has no MachineConfigNode", name)
		}
		mcn := n.MCN.DeepCopy()
		cond := pinned.Prefetching(name, pinned.Progress{Done: 2, Total: 3, Bytes: 21_000_000})
		if i == 1 {
			cond = pinned.Failed(errors.New("pull image q/x@sha256:00 failed"))
		}
		mcn.Status.PinnedImageSets = []mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "release", DesiredGeneration: 1}}
		for j := range mcn.Status.Conditions {
			if mcn.Status.Conditions[j].Type == string(cond.Type) {
				mcn.Status.Conditions[j] = metav1.Condition{Type: string(cond.Type), Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
			}
		}
		events = append(events, model.MCNEvent(mcn))
	}
	g.Sync(c.Store.Apply(events))
	v := ansi.Strip(g.View())
	if !hasPinned(g.View()) {
		t.Errorf("grid has no PINNED column:\n%s", v)
	}
	for _, want := range []string{"pulling: 2/3 images, 21.0 MB", "failed"} {
		if !strings.Contains(v, want) {
			t.Errorf("grid lacks %q:\n%s", want, v)
		}
	}
	checkShape(t, g.View(), 200, 16)
}

// A node behind its pool's target that downloads its next OS image before its drain
// shows ⇩ in UPDATED and how far the download is in IN PHASE.
func TestGridStagingProgress(t *testing.T) {
	g, c := newGrid(t, 200, 16)
	n := c.Store.Node(fixture.BehindNode)
	if n == nil || n.Obj == nil {
		t.Fatalf("fixture node %s missing", fixture.BehindNode)
	}
	obj := n.Obj.DeepCopy()
	const img = "quay.io/os@sha256:02"
	obj.Annotations[nodeanno.StageImageKey] = img
	obj.Annotations[nodeanno.StageProgressKey] = nodeanno.StageProgress{Image: img, Bytes: 297e6, TotalBytes: 1.1e9, Layers: 3, TotalLayers: 51}.Value()
	g.Sync(c.Store.Apply([]model.Event{model.NodeEvent(obj)}))
	var row string
	for _, l := range strings.Split(ansi.Strip(g.View()), "\n") {
		if strings.Contains(l, fixture.BehindNode) {
			row = l
		}
	}
	if !strings.Contains(row, "⇩") || !strings.Contains(row, " 27%") {
		t.Fatalf("row of %s lacks ⇩ and 27%%:\n%s", fixture.BehindNode, row)
	}
	if got := c.Store.Node(fixture.BehindNode).StageText; got != "pulling "+img+" (297.0 MB of 1.1 GB, 3 of 51 layers)" {
		t.Fatalf("StageText = %q", got)
	}
	checkShape(t, g.View(), 200, 16)
}

// TestGridSortByColumn: each column's shift+letter sorts by that column, the header
// marks it with an arrow that says which way its values go down the rows (IN PHASE,
// longest first, descends), and the same key again reverses it.
func TestGridSortByColumn(t *testing.T) {
	for _, tc := range []struct {
		key, column, first string
	}{
		{"n", "NAME", "ci-ln-9xsm9-infra-a-m3x7v"}, // by name already: see below
		{"O", "POOL", "ci-ln-9xsm9-infra-a-m3x7v"},
		{"T", "STATUS", "ci-ln-9xsm9-worker-c-t227w"},   // NotReady first
		{"H", "", "ci-ln-9xsm9-infra-a-m3x7v"},          // not started first
		{"A", "IN PHASE", "ci-ln-9xsm9-worker-a-2d8tz"}, // longest in its phase first
		{"C", "CURRENT", "ci-ln-9xsm9-infra-a-m3x7v"},   // rendered-infra-… first
		{"E", "DESIRED", "ci-ln-9xsm9-infra-a-m3x7v"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			g, _ := newGrid(t, 200, 16)
			if tc.key == "n" {
				// The grid starts by name: N reverses it, and N again puts it back.
				tc.key = "N"
				g.Update(key(tc.key))
			}
			g.Update(key(tc.key))
			if got := strings.Fields(strings.Split(tuitest.Plain(g.View()), "\n")[2])[0]; got != tc.first {
				t.Errorf("%s: first row %s, want %s", tc.key, got, tc.first)
			}
			first, second := "▴", "▾"
			if tc.column == "IN PHASE" {
				first, second = second, first
			}
			header := strings.Split(tuitest.Plain(g.View()), "\n")[1]
			if tc.column != "" && !strings.Contains(header, tc.column+first) {
				t.Errorf("%s: header %q does not mark %s %s", tc.key, header, tc.column, first)
			}
			desc := g.Query().Desc
			g.Update(key(tc.key))
			if g.Query().Desc == desc {
				t.Errorf("%s again: not reversed", tc.key)
			}
			if header := strings.Split(tuitest.Plain(g.View()), "\n")[1]; tc.column != "" && !strings.Contains(header, tc.column+second) {
				t.Errorf("%s twice: header %q does not mark %s %s", tc.key, header, tc.column, second)
			}
		})
	}
}

// TestGridOpenShiftNames: on OpenShift's 40-character names (33 shared) every row reads
// differently at every width, CURRENT and DESIRED read differently wherever the node's
// configs differ, IN PHASE stays at 80 columns, and at 200 STATUS says what kubectl
// says (SchedulingDisabled) while the phase headers stay short.
func TestGridOpenShiftNames(t *testing.T) {
	for _, w := range []int{80, 100, 120, 160, 200} {
		t.Run(itoa(w), func(t *testing.T) {
			c := tuitest.Common(false, fixture.SmallOpenShift())
			g := grid.New(c)
			g.SetSize(w, 16)
			lines := strings.Split(tuitest.Plain(g.View()), "\n")
			header := lines[1]
			col := func(title string) int { // in cells, as the rows are read
				i := strings.Index(header, title)
				if i < 0 {
					return -1
				}
				return len([]rune(header[:i]))
			}
			names := map[string]bool{}
			for _, l := range lines[2:] {
				if strings.TrimSpace(l) == "" {
					continue
				}
				name := strings.Fields(l)[0]
				if names[name] {
					t.Errorf("two rows read %q:\n%s", name, strings.Join(lines, "\n"))
				}
				names[name] = true
				if cur, des := col("CURRENT"), col("DESIRED"); cur > 0 && des > 0 {
					r := []rune(l)
					cv, dv := strings.TrimSpace(string(r[cur:des])), strings.TrimSpace(string(r[des:]))
					n := c.Store.Node(nodeNamed(c, name))
					if n != nil && n.Current != n.Desired && cv == dv {
						t.Errorf("%s: CURRENT and DESIRED both read %q", n.Name, cv)
					}
				}
			}
			if len(names) != c.Store.Len() {
				t.Errorf("%d rows, %d nodes", len(names), c.Store.Len())
			}
			if !strings.Contains(header, "IN PHASE") {
				t.Errorf("no IN PHASE at %d columns: %q", w, header)
			}
			if strings.Contains(header, "PREPARED") || strings.Contains(header, "UNCORDONED") {
				t.Errorf("phase columns of one glyph under long titles: %q", header)
			}
			if w == 200 && !strings.Contains(strings.Join(lines, "\n"), "Ready,SchedulingDisabled") {
				t.Errorf("STATUS at 200 columns is not kubectl's:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// nodeNamed is the node whose name a cut cell shows, by its end.
func nodeNamed(c *common.Common, cell string) string {
	end := cell[strings.LastIndex(cell, "…")+len("…"):]
	if !strings.Contains(cell, "…") {
		end = cell
	}
	found := ""
	c.Store.Each(func(n *model.Node) {
		if strings.HasSuffix(n.Name, end) {
			found = n.Name
		}
	})
	return found
}

// TestGridWaitingApartFromInProgress: a drain waiting on a budget (the agent retries
// it) and a drain under way are drawn with different glyphs, in every colour mode.
func TestGridWaitingApartFromInProgress(t *testing.T) {
	for _, color := range []bool{true, false} {
		c := tuitest.Common(color, fixture.Small())
		g := grid.New(c)
		g.SetSize(200, 16)
		rows := map[string]string{}
		for _, l := range strings.Split(tuitest.Plain(g.View()), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				rows[f[0]] = l
			}
		}
		waiting, draining := rows[fixture.WaitingNode], rows[fixture.DrainingNode]
		if !strings.Contains(waiting, "⧖") || strings.Contains(waiting, "↻") {
			t.Errorf("colour %v: the waiting drain is drawn %q", color, waiting)
		}
		if !strings.Contains(draining, "↻") || strings.Contains(draining, "⧖") {
			t.Errorf("colour %v: the drain under way is drawn %q", color, draining)
		}
	}
}
