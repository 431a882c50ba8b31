package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/styles"
)

// drainView is a rollout preview's drain forecast as it arrives: read off the
// program's loop (pods are not in the TUI's caches), shown as "reading pods…" until
// the answer, then the nodes whose drain blocks or loses data, or why it could not be
// read. The rule is core's (drainforecast.Check, through action.DrainForecast), the
// one `mcotui rollout POOL` prints.
type drainView struct {
	draining []string
	done     bool
	// unread says the session reads no pods (Options.NoPods): the forecast is not
	// read, and the preview says so rather than let silence pass for "none blocks".
	unread bool
	rep    drainforecast.Report
	err    error
}

// drainForecastMsg carries the answer to the preview doc it was read for.
type drainForecastMsg struct {
	view *drainView
	doc  *dialog.Document
	rep  drainforecast.Report
	err  error
}

// readDrainForecast starts the read for a preview; nil when the session reads no pods
// (the preview then says nothing of drains) or when no node drains (nothing to read).
func (u *UI) readDrainForecast(doc *dialog.Document, v *drainView, members []*corev1.Node, maxUnavailable int) tea.Cmd {
	if v == nil || v.done {
		return nil
	}
	df, ctx := u.opts.DrainForecast, u.life
	draining := slices.Clone(v.draining)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		u.waits() // on the API server
		rep, err := df.DrainForecast(ctx, members, draining, maxUnavailable)
		return drainForecastMsg{view: v, doc: doc, rep: rep, err: err}
	}
}

// newDrainView is the forecast's state for a preview whose draining nodes are
// draining; nil when the session has no action.DrainForecast and no reason for it
// (noPods, Options.NoPods: a serve session not let read pods), unread with one.
func newDrainView(df action.DrainForecast, noPods string, draining []string) *drainView {
	if df == nil {
		if noPods == "" {
			return nil
		}
		return &drainView{draining: draining, done: true, unread: true}
	}
	return &drainView{draining: draining, done: len(draining) == 0}
}

// drainArrived puts the answer in its preview and lays the preview out again if it
// is still open (a preview closed meanwhile just drops it).
func (u *UI) drainArrived(m drainForecastMsg) {
	m.view.done, m.view.rep, m.view.err = true, m.rep, m.err
	if d, ok := u.dialog.(*dialog.Document); ok && d == m.doc {
		d.SetSize(u.width, u.height)
	}
}

// drainSummary is the preview's lines near its top: what the forecast says, in a
// few words, so that it is seen without scrolling; a read that failed is said whole,
// wrapped under its label, since its reason is what the user acts on.
func drainSummary(st *styles.Styles, v *drainView, width int, line func(string)) {
	const label = "drain forecast "
	body := drainSummaryText(st, v)
	for i, l := range strings.Split(ansi.Wrap(body, max(20, width-len(label)), " "), "\n") {
		if i == 0 {
			line(st.Label.Render(label) + l)
		} else {
			line(strings.Repeat(" ", len(label)) + l)
		}
	}
}

func drainSummaryText(st *styles.Styles, v *drainView) string {
	n := len(v.draining)
	switch {
	case n == 0:
		return "no node drains"
	case v.unread:
		return st.Dim.Render(fmt.Sprintf("not read (%s): this session reads no pods (mcotui serve --pod-reads)", drain(n)))
	case !v.done:
		return st.Dim.Render(fmt.Sprintf("reading pods… (%s)", drain(n)))
	case v.err != nil:
		return st.Error.Render("cannot read: " + v.err.Error())
	}
	blocking, losing := v.counts()
	if blocking == 0 && losing == 0 && !v.rep.Capacity.Short {
		return st.OK.Render(drain(n) + "; none blocks or loses data")
	}
	var parts []string
	if blocking > 0 {
		parts = append(parts, st.Error.Render(fmt.Sprintf("%d will block", blocking)))
	}
	if losing > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("%d lose data", losing)))
	}
	if v.rep.Capacity.Short {
		parts = append(parts, st.Error.Render("pods will not fit"))
	}
	return drain(n) + ": " + strings.Join(parts, ", ") + st.Dim.Render(" (below)")
}

// counts are the nodes whose drain blocks, and the others with a risk.
func (v *drainView) counts() (blocking, losing int) {
	for _, risks := range v.rep.ByNode() {
		if slices.ContainsFunc(risks, func(r drainforecast.Risk) bool { return r.Kind.Blocks() }) {
			blocking++
		} else {
			losing++
		}
	}
	return blocking, losing
}

// drain is how many nodes drain, as a clause: "1 node drains", "3 nodes drain".
func drain(n int) string {
	if n == 1 {
		return "1 node drains"
	}
	return fmt.Sprintf("%d nodes drain", n)
}

func nodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// drainSection is the forecast in full, at the preview's end: each node with a risk,
// its name whole (the shared start of OpenShift's names is what cutting would keep),
// the kinds that block and those that lose data, then each pod in the words of
// `mcotui rollout POOL`; then the capacity left while maxUnavailable nodes are
// cordoned.
func drainSection(st *styles.Styles, v *drainView, width int, line func(string)) {
	if len(v.draining) == 0 || !v.done || v.err != nil || v.unread {
		return
	}
	// wrap writes s from column indent, its further lines two columns in.
	wrap := func(s string, indent int) {
		for i, l := range strings.Split(ansi.Wrap(s, max(20, width-indent-2), " "), "\n") {
			if i == 0 {
				line(strings.Repeat(" ", indent) + l)
			} else {
				line(strings.Repeat(" ", indent+2) + l)
			}
		}
	}
	by := v.rep.ByNode()
	line("")
	line(st.Section.Render("Drain forecast") + st.Dim.Render(fmt.Sprintf("  %d of %s block or lose data", len(by), nodes(len(v.draining)))))
	for _, node := range v.draining {
		risks := by[node]
		if len(risks) == 0 {
			continue
		}
		var blocks, loses []string
		for _, r := range risks {
			k := string(r.Kind)
			switch {
			case r.Kind.Blocks() && !slices.Contains(blocks, k):
				blocks = append(blocks, k)
			case !r.Kind.Blocks() && !slices.Contains(loses, k):
				loses = append(loses, k)
			}
		}
		var kinds []string
		if len(blocks) > 0 {
			kinds = append(kinds, st.Error.Render("blocks: "+strings.Join(blocks, ", ")))
		}
		if len(loses) > 0 {
			kinds = append(kinds, st.Warn.Render("loses data: "+strings.Join(loses, ", ")))
		}
		wrap(node+"  "+strings.Join(kinds, "; "), 2)
		for _, r := range risks {
			wrap(st.Dim.Render(r.String()), 4)
		}
	}
	if s := v.rep.Capacity.String(); s != "" {
		style := st.Dim
		if v.rep.Capacity.Short {
			style = st.Error
		}
		wrap(style.Render("capacity: "+s), 2)
	}
}
