package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/panes/configs"
	"github.com/mcotui/mcotui/tui/styles"
)

// previewText lays a rollout forecast out for people: the waves in order, each node
// with the config it leaves, and what the node disruption policy predicts it does
// (its actions, whether it drains); then the nodes the rollout would not reach, and why;
// then, when drain is not nil, the drain forecast as far as it has arrived.
func previewText(st *styles.Styles, fc rollout.Forecast, current func(string) string, drain *drainView, width int) string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, width, "…"))
		b.WriteByte('\n')
	}
	// list names nodes whole, wrapped under the label: names cut at the screen's edge
	// would all read alike.
	list := func(label string, names []string) {
		room := max(20, width-len(label))
		cur := fmt.Sprintf("%d: ", len(names))
		first := true
		flush := func() {
			if first {
				line(st.Label.Render(label) + cur)
			} else {
				line(strings.Repeat(" ", len(label)) + cur)
			}
			first, cur = false, ""
		}
		for i, n := range names {
			if i < len(names)-1 {
				n += ","
			}
			if cur != "" && !strings.HasSuffix(cur, ": ") && len(cur)+1+len(n) > room {
				flush()
			}
			if cur != "" && !strings.HasSuffix(cur, ": ") {
				cur += " "
			}
			cur += n
		}
		flush()
	}
	line(st.Label.Render("target         ") + fc.Target)
	line(st.Label.Render("maxUnavailable ") + fmt.Sprintf("%d node(s) at once", fc.MaxUnavailable))
	if drain != nil {
		drainSummary(st, drain, width, line)
	}
	if fc.Paused {
		line(st.Paused.Render("The pool is paused: this is what happens once it is resumed."))
	}
	if len(fc.AtTarget) > 0 {
		list("at the target  ", fc.AtTarget)
	}
	if len(fc.InFlight) > 0 {
		// Said so that "Wave 1" is read right: the forecast assumes these finish.
		list("updating now   ", fc.InFlight)
	}
	if len(fc.Waves) == 0 && len(fc.Blocked) == 0 {
		line("")
		line(st.OK.Render("Every node is at the target: nothing to roll out."))
	}
	nameW, zoneW, cfgW := 4, 4, 4
	for _, w := range fc.Waves {
		for _, n := range w.Nodes {
			nameW = max(nameW, len(n.Node))
			zoneW = max(zoneW, len(n.Zone))
		}
	}
	for _, sk := range fc.Blocked {
		nameW = max(nameW, len(sk.Node))
	}
	// Names take what the other columns and a short ACTIONS leave.
	nameW = min(nameW, max(width/3, width-zoneW-46))
	// Cut names keep what tells them apart from the pool's other nodes.
	names := append(append([]string(nil), fc.AtTarget...), fc.InFlight...)
	for _, w := range fc.Waves {
		for _, n := range w.Nodes {
			names = append(names, n.Node)
		}
	}
	for _, sk := range fc.Blocked {
		names = append(names, sk.Node)
	}
	pre, suf := layout.SharedEnds(names)
	fitName := func(s string, w int) string {
		var fb strings.Builder
		layout.FitName(&fb, s, w, pre, suf)
		return fb.String()
	}
	hash := func(c string) string {
		if c == "" {
			return "(none)"
		}
		if i := strings.LastIndexByte(c, '-'); i >= 0 && strings.HasPrefix(c, render.RenderedPrefix) {
			c = c[i+1:]
		}
		return c[:min(len(c), 10)]
	}
	cfgW = 10
	fit := func(s string, w int) string {
		var fb strings.Builder
		layout.Fit(&fb, s, w)
		return fb.String()
	}
	for i, w := range fc.Waves {
		line("")
		title := fmt.Sprintf("Wave %d", i+1)
		switch {
		case i == 0 && w.AfterInFlight:
			title += ": once the updates now in flight finish"
		case i == 0:
			title += ": the next step"
		}
		if w.Canary {
			title += " (canary)"
		}
		line(st.Section.Render(title) + st.Dim.Render(fmt.Sprintf("  %d node(s)", len(w.Nodes))))
		line(st.Header.Render("  " + fit("NODE", nameW) + "  " + fit("ZONE", zoneW) + "  " + fit("FROM", cfgW) + "  DRAIN  ACTIONS"))
		for _, n := range w.Nodes {
			from := n.From
			if from == "" {
				from = current(n.Node)
			}
			drain := "no   "
			acts := configs.Actions(st, n.Decision)
			switch {
			case n.Err != nil:
				drain, acts = "?    ", st.Error.Render(n.Err.Error())
			case n.Decision.Drain:
				drain = st.Warn.Render("yes  ")
			}
			if n.Retry {
				acts += st.Dim.Render("  (retry)")
			}
			line("  " + fitName(n.Node, nameW) + "  " + fit(layout.OrDash(n.Zone), zoneW) + "  " + fit(hash(from), cfgW) + "  " + drain + "  " + acts)
		}
	}
	if len(fc.Blocked) > 0 {
		line("")
		line(st.Section.Render("Not reached") + st.Dim.Render(fmt.Sprintf("  %d node(s)", len(fc.Blocked))))
		for _, sk := range fc.Blocked {
			for j, l := range strings.Split(ansi.Wrap(sk.Message, max(20, width-nameW-6), " "), "\n") {
				name := ""
				if j == 0 {
					name = sk.Node
				}
				line("  " + fitName(name, nameW) + "  " + st.Dim.Render(l))
			}
		}
	}
	if drain != nil {
		drainSection(st, drain, width, line)
	}
	return strings.TrimRight(b.String(), "\n")
}
