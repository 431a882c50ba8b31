package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// keyCheck is one key of the help: how to get where it works, the keys pressed, and
// what must have changed.
type keyCheck struct {
	setup []tea.Msg
	keys  []tea.Msg
	ok    func(u *UI, before string, cmd tea.Cmd) bool
}

// TestEveryHelpKeyDoesWhatItSays: each key the `?` overlay lists (on a cluster mcotui
// runs, with a Driver, so every action is listed) is pressed where it works, and what
// it changes is checked. A key added to the help without a check here fails the test.
func TestEveryHelpKeyDoesWhatItSays(t *testing.T) {
	typed := func(s string) []tea.Msg { return tuitest.Typed(s) }
	special := func(k ...rune) []tea.Msg { return tuitest.Special(k...) }
	title := func(want string) func(*UI, string, tea.Cmd) bool {
		return func(u *UI, _ string, _ tea.Cmd) bool {
			return u.dialog != nil && strings.Contains(u.dialog.Title(), want)
		}
	}
	selected := func(u *UI) string {
		if n := u.grid.Selected(); n != nil {
			return n.Name
		}
		return ""
	}
	moved := func(u *UI, before string, _ tea.Cmd) bool { return tuitest.Plain(u.View().Content) != before }
	sortBy := func(k model.SortKey) keyCheck {
		return keyCheck{ok: func(u *UI, _ string, _ tea.Cmd) bool {
			q := u.grid.Query()
			return q.Sort == k && (k != model.SortName || q.Desc) // name is the start: reversed
		}}
	}
	first, last := "ci-ln-9xsm9-infra-a-m3x7v", fixture.WaitingNode
	checks := map[string]keyCheck{
		"Global/?":         {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.showHelp }},
		"Global/:":         {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.promptKind == promptCommand }},
		"Global//":         {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.promptKind == promptFilter }},
		"Global/tab":       {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.focus == panePools }},
		"Global/shift+tab": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.focus == panePools }},
		"Global/esc": {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)),
			ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Filter.IsZero() }},
		"Global/b": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.view == viewBootImages }},
		"Global/c": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.view == viewConfigs }},
		"Global/q": {ok: func(_ *UI, _ string, cmd tea.Cmd) bool { return quits(cmd) }},

		"Actions (each asks to confirm)/p":       {setup: poolAt(2), ok: title("Pause pool worker")},
		"Actions (each asks to confirm)/m":       {setup: poolAt(2), ok: title("maxUnavailable of pool worker")},
		"Actions (each asks to confirm)/P enter": {setup: poolAt(2), keys: tuitest.Seq(typed("P"), special(tea.KeyEnter)), ok: title("Start the rollout of pool worker")},
		"Actions (each asks to confirm)/R":       {setup: poolAt(2), ok: title("Roll back pool worker")},
		"Actions (each asks to confirm)/r":       {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), ok: title("Retry")},
		"Actions (each asks to confirm)/b m":     {keys: typed("bm"), ok: title("oot image")},
		"Actions (each asks to confirm)/b e": {keys: typed("be"), ok: func(u *UI, before string, _ tea.Cmd) bool {
			return u.dialog != nil && strings.Contains(tuitest.Plain(u.View().Content), "selector:") && tuitest.Plain(u.View().Content) != before
		}},
		"Actions (each asks to confirm)/D": {setup: poolAt(2), ok: title("Drive the rollout of pool worker")},
		// The degraded node's drain is blocked by default/web-0.
		"Actions (each asks to confirm)/v":      {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), ok: title("Evict pod default/web-0")},
		"Actions (each asks to confirm)/ctrl+k": {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), keys: []tea.Msg{ctrl('k')}, ok: title("Delete pod default/web-0")},

		"Move/↑/k":    {setup: typed("jj"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) == "ci-ln-9xsm9-infra-b-q8k2m" }},
		"Move/↓/j":    {ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) == "ci-ln-9xsm9-infra-b-q8k2m" }},
		"Move/pgup":   {setup: typed("G"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) != last }},
		"Move/pgdn":   {ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) != first }},
		"Move/ctrl+u": {setup: typed("G"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) != last }},
		"Move/ctrl+d": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) != first }},
		"Move/g":      {setup: typed("G"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) == first }},
		"Move/G":      {ok: func(u *UI, _ string, _ tea.Cmd) bool { return selected(u) == last }},

		"Pools/enter": {setup: tuitest.Seq(special(tea.KeyTab), typed("j")), ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Pool == "master" }},
		"Pools/y":     {setup: special(tea.KeyTab), ok: title("MachineConfigPool infra (YAML)")},
		"Pools/d":     {setup: special(tea.KeyTab), ok: title("Describe MachineConfigPool infra")},
		"Pools/a": {setup: tuitest.Seq(typed(":pool worker"), special(tea.KeyEnter, tea.KeyTab)),
			ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Pool == "" }},
		"Pools/P": {setup: poolAt(2), ok: title("Rollout preview of pool worker")},
		"Pools/c": {setup: poolAt(1), ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.view == viewConfigs && u.configs.Pool() == "master" }},

		"Nodes/enter": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.showDetail && u.detail.Name() == first }},
		"Nodes/y":     {ok: title("Node " + first)},
		"Nodes/d":     {ok: title("Describe Node " + first)},
		"Nodes/s":     {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Sort == model.SortPool }},
		"Nodes/S":     {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Desc }},
		"Nodes/a": {setup: tuitest.Seq(typed(":pool worker"), special(tea.KeyEnter)),
			ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.grid.Query().Pool == "" }},
		"Nodes//": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.promptKind == promptFilter }},
		"Nodes/N": sortBy(model.SortName), "Nodes/O": sortBy(model.SortPool), "Nodes/H": sortBy(model.SortPhase),
		"Nodes/A": sortBy(model.SortAge), "Nodes/T": sortBy(model.SortStatus), "Nodes/C": sortBy(model.SortCurrent),
		"Nodes/E": sortBy(model.SortDesired),

		"From a node/l": {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), ok: title("Log of the agent on node ci-ln-9xsm9-master-1")},
		"From a node/o": {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), ok: title("Pod default/web-0 (YAML)")},
		"From a node/B": {setup: tuitest.Seq(typed("/degraded"), special(tea.KeyEnter)), ok: title("PodDisruptionBudgets of pod default/web-0")},
		"From a node/]/[": {setup: tuitest.Seq([]tea.Msg{twoBlockersMsg()}, typed("/waiting"), special(tea.KeyEnter), special(tea.KeyEnter)), keys: typed("]"),
			ok: func(u *UI, _ string, _ tea.Cmd) bool {
				b, ok := u.detail.Blocker()
				return ok && b.Pod == twoBlockers[1].Pod && strings.Contains(tuitest.Plain(u.View().Content), "▸ "+b.Pod)
			}},

		"Global/i": {ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.view == viewBuilds }},
		"Actions (each asks to confirm)/i r": {setup: []tea.Msg{eventsMsg{events: fixture.Builds()}}, keys: typed("ir"),
			ok: title("Rebuild the OS image of pool worker")},

		"Configs/d":   {setup: typed("c"), ok: title("Diff")},
		"Configs/x":   {setup: typed("cj"), ok: moved},
		"Configs/←/h": {setup: typed("c"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.configs.Pool() == "worker" }}, // from infra, wrapping
		"Configs/→/l": {setup: typed("c"), ok: func(u *UI, _ string, _ tea.Cmd) bool { return u.configs.Pool() == "master" }},
	}
	press := map[string][]tea.Msg{
		"↑/k": typed("k"), "↓/j": typed("j"), "pgup": special(tea.KeyPgUp), "pgdn": special(tea.KeyPgDown),
		"ctrl+u": {ctrl('u')}, "ctrl+d": {ctrl('d')}, "←/h": typed("h"), "→/l": typed("l"),
		"tab": special(tea.KeyTab), "shift+tab": {tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}},
		"esc": special(tea.KeyEscape), "enter": special(tea.KeyEnter),
	}
	newUI := func() *UI {
		ui, src := newScenarioUI(scenario{managed: true, driver: true, pods: true})
		t.Cleanup(src.Close)
		t.Cleanup(ui.stopDrive)
		drive(ui, tea.WindowSizeMsg{Width: 120, Height: 40})
		return ui
	}
	listed := 0
	for _, g := range newUI().helpGroups() {
		for _, e := range g.Entries {
			if strings.HasPrefix(g.Title, "Phase") || strings.HasPrefix(g.Title, "Filter") || strings.HasPrefix(g.Title, "Commands") {
				continue // not keys: the glyphs, the phase columns, the filter's and the palette's words
			}
			listed++
			name := g.Title + "/" + e.Key
			t.Run(name, func(t *testing.T) {
				c, ok := checks[name]
				if !ok {
					t.Fatalf("the help lists %s (%s) and no check here says what it does", name, e.Desc)
				}
				ui := newUI()
				drive(ui, c.setup...)
				before := tuitest.Plain(ui.View().Content)
				keys := c.keys
				if keys == nil {
					if p, ok := press[e.Key]; ok {
						keys = p
					} else {
						keys = typed(e.Key)
					}
				}
				var cmd tea.Cmd
				for i, k := range keys {
					_, cmd = ui.Update(k)
					if i < len(keys)-1 || !strings.HasSuffix(name, "/q") {
						runCmd(ui, cmd, 0)
					}
				}
				if !c.ok(ui, before, cmd) {
					t.Errorf("%s (%s) did not do it; the screen:\n%s", name, e.Desc, tuitest.Plain(ui.View().Content))
				}
			})
		}
	}
	if listed < len(checks) {
		t.Errorf("the help lists %d keys, %d are checked: a check for a key no longer listed", listed, len(checks))
	}
}
