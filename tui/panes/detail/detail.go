// Package detail is a node's detail pane, as `oc describe machineconfignode` and
// `oc describe node` would tell it: every condition with its reason, message and
// transition time, the node's annotations, and for a blocked drain the pods and the
// PodDisruptionBudgets that block it.
package detail

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// Model is the detail pane of one node.
type Model struct {
	c       *common.Common
	focused bool
	width   int
	height  int

	name  string      // the node shown
	node  *model.Node // what the content was built from, to tell when it is stale
	built time.Time   // the clock reading the ages in the content were built at
	vp    viewport.Model

	// events is the Events section of the node shown (the root reads them when the
	// node opens), "" until they are read.
	events, eventsOf string

	// blocker is the drain blocker chosen with ] and [ ("namespace/name"), the pod o,
	// B, v and ctrl+k act on; "" (or a pod no longer blocking) is the first.
	blocker string
}

// Blocker is the drain blocker of the node shown that o, B, v and ctrl+k act on: the
// one chosen with ] and [, else the first. ok is false when no pod blocks its drain.
func (m *Model) Blocker() (b phase.Blocker, ok bool) {
	n := m.c.Store.Node(m.name)
	if n == nil || len(n.Blockers) == 0 {
		return phase.Blocker{}, false
	}
	return n.Blockers[m.blockerIndex(n)], true
}

func (m *Model) blockerIndex(n *model.Node) int {
	return max(0, slices.IndexFunc(n.Blockers, func(b phase.Blocker) bool { return b.Pod == m.blocker }))
}

// SetEvents gives the detail of node name its Events section, drawn as is (the root
// formats it as kubectl describe does); it is kept until another node opens.
func (m *Model) SetEvents(name, section string) {
	if name != m.name {
		return // read for a node no longer shown
	}
	m.events, m.eventsOf = section, name
	m.rebuild()
}

// New returns an empty detail pane.
func New(c *common.Common) *Model {
	vp := common.NewViewport(c)
	vp.FillHeight = true
	return &Model{c: c, vp: vp}
}

// SetFocused tells the pane whether keys go to it.
func (m *Model) SetFocused(f bool) { m.focused = f }

// Name is the node shown.
func (m *Model) Name() string { return m.name }

// SetNode shows the node named name, from the top.
func (m *Model) SetNode(name string) {
	if name != m.eventsOf {
		m.events, m.eventsOf = "", ""
	}
	if name != m.name {
		m.blocker = ""
	}
	m.name = name
	m.vp.GotoTop()
	m.rebuild()
}

// SetSize implements common.Component.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.vp.SetWidth(width)
	m.vp.SetHeight(max(0, height-1))
	m.rebuild()
}

// Sync applies one batch of store changes: the content is rebuilt only when the node
// shown changed.
func (m *Model) Sync(model.Changes) {
	if m.name != "" && m.c.Store.Node(m.name) != m.node {
		m.rebuild()
	}
}

// Tick rebuilds the content when the clock has moved, for the ages in it.
func (m *Model) Tick() {
	if m.name != "" && !m.c.Clock.Now().Equal(m.built) {
		m.rebuild()
	}
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if ok && !m.focused {
		return nil
	}
	if k := m.c.Keys; ok && key.Matches(kp, k.NextBlocker, k.PrevBlocker) {
		if n := m.c.Store.Node(m.name); n != nil && len(n.Blockers) > 0 {
			step := 1
			if key.Matches(kp, k.PrevBlocker) {
				step = len(n.Blockers) - 1
			}
			m.blocker = n.Blockers[(m.blockerIndex(n)+step)%len(n.Blockers)].Pod
			m.rebuild()
		}
		return nil
	}
	return common.Scroll(&m.vp, m.c.Keys, msg)
}

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	st := m.c.Styles
	title := " Node " + m.name
	if n := m.node; n != nil {
		title += "  pool " + n.Pool
		if n.Phase >= 0 {
			title += "  phase " + n.PhaseName()
		}
	}
	if pct := m.vp.ScrollPercent(); m.vp.TotalLineCount() > m.vp.Height() {
		title += fmt.Sprintf("  %3.0f%%", pct*100)
	}
	style := st.Title
	if m.focused {
		style = st.TitleFocused
	}
	var b strings.Builder
	layout.Fit(&b, title, m.width)
	out := style.Render(b.String())
	if m.height > 1 {
		out += "\n" + m.vp.View()
	}
	return out
}

// rebuild renders the whole document into the viewport. A node's document is a few
// dozen lines, so it is rebuilt whole rather than patched.
func (m *Model) rebuild() {
	m.node = m.c.Store.Node(m.name)
	m.built = m.c.Clock.Now()
	if m.width <= 0 {
		return
	}
	if m.node == nil {
		if m.name == "" {
			m.vp.SetContent(m.c.Styles.Dim.Render("Select a node in the grid and press enter."))
		} else {
			m.vp.SetContent(m.c.Styles.Dim.Render(fmt.Sprintf("Node %s no longer exists.", m.name)))
		}
		return
	}
	y := m.vp.YOffset()
	m.vp.SetContent(m.document(m.node))
	m.vp.SetYOffset(y)
}

func (m *Model) document(n *model.Node) string {
	st := m.c.Styles
	now := m.built
	var b strings.Builder
	const labelW = 17
	field := func(label, value string) {
		b.WriteString(st.Label.Render(fmt.Sprintf("%-*s", labelW, label+":")))
		// Long values (a Degraded reason) wrap under themselves.
		for i, l := range strings.Split(ansi.Wrap(value, max(20, m.width-labelW), " "), "\n") {
			if i > 0 {
				layout.Pad(&b, labelW)
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	section := func(title string) {
		b.WriteByte('\n')
		b.WriteString(st.Section.Render(title))
		b.WriteByte('\n')
	}

	field("Name", n.Name)
	field("Pool", n.Pool)
	field("Current config", n.Current)
	desired := n.Desired
	if n.Desired != n.Current {
		desired = st.Warn.Render(desired)
	}
	field("Desired config", desired)
	// Image mode: the OS image MCO built for the pool, and the one the node booted.
	if n.Obj != nil {
		if want, have := textsafe.Escape(nodeanno.DesiredImage(n.Obj)), textsafe.Escape(nodeanno.CurrentImage(n.Obj)); want != "" || have != "" {
			field("Current image", have)
			if want != have {
				want = st.Warn.Render(want)
			}
			field("Desired image", want)
		}
	}
	state := n.State
	switch n.State {
	case nodeanno.StateDegraded, nodeanno.StateUnreconcilable:
		state = st.Error.Render(state)
	case "":
		state = st.Dim.Render("(none)")
	}
	field("State", state)
	if n.Reason != "" {
		field("Reason", textsafe.Escape(n.Reason))
	}
	if n.Phase >= 0 {
		c := n.Cells[n.Phase]
		word := st.State[c.State].Render(stateWord(c.State))
		if n.Waiting && c.State == phase.InProgress {
			word = st.State[c.State].Render("waiting")
		}
		field("Phase", fmt.Sprintf("%s, %s for %s", n.PhaseName(), word, layout.Age(now.Sub(n.Since)))+m.est(n, now))
	} else {
		field("Phase", st.Dim.Render("not started")+m.est(n, now))
	}
	if r := n.RetryText(now); r != "" {
		field("Retry", st.Warn.Render(r))
	}
	if n.Behind {
		field("Rollout", st.Warn.Render(fmt.Sprintf("behind: runs its desired config, but pool %s targets %s", n.Pool, n.Target)))
	}
	switch n.Stage {
	case rollout.StageRetrying:
		field("OS image", st.Warn.Render(textsafe.Escape(n.StageText)))
	case rollout.StagePulling, rollout.StageStaged:
		field("OS image", textsafe.Escape(n.StageText)+" (before the drain)")
	}
	ready := n.Status()
	switch {
	case ready == "":
		ready = st.Dim.Render("(no Node object)")
	case n.Ready != "Ready":
		ready = st.Warn.Render(ready + readyWhy(n))
	}
	field("Status", ready)
	sched := "yes"
	switch {
	case n.AdminCordoned:
		sched = st.Warn.Render("no: cordoned by an administrator, and stays cordoned after the update")
	case n.Unschedulable && nodeanno.CordonedBy(n.Obj) == "" && nodeanno.MCOCordoned(n.Obj):
		sched = "no: cordoned by MCO's drain controller for the update, uncordoned when it completes"
	case n.Unschedulable:
		sched = "no: cordoned by " + nodeanno.CordonedBy(n.Obj)
	case n.Obj == nil:
		sched = st.Dim.Render("(no Node object)")
	}
	field("Schedulable", sched)

	switch {
	case len(n.Blockers) > 0 && n.Waiting:
		// Not a failure: the agent retries the drain until the budgets allow it.
		section(fmt.Sprintf("Drain waiting for %s on", layout.Age(now.Sub(n.Since))))
		m.blockers(&b, n, st.Warn)
	case len(n.Blockers) > 0:
		section("Drain blocked by")
		m.blockers(&b, n, st.Error)
	case n.Waiting:
		section(fmt.Sprintf("Waiting for %s on", layout.Age(now.Sub(n.Since))))
		b.WriteString(ansi.Wrap("  "+textsafe.Escape(n.WaitFor), m.width, " "))
		b.WriteByte('\n')
	}

	// The Events next, before the long tables: what happened lately is what an
	// operator opens a node for.
	if m.events != "" {
		b.WriteByte('\n')
		b.WriteString(m.events)
	}

	section("Conditions")
	if n.MCN == nil {
		b.WriteString(st.Dim.Render("  No MachineConfigNode for this node."))
		b.WriteByte('\n')
	} else {
		m.conditions(&b, n.MCN.Status.Conditions, now, n.Degraded)
		m.pinnedImages(&b, n.MCN, section)
		m.irreconcilable(&b, n.MCN, section)
	}

	section("Annotations")
	if n.Obj == nil || len(n.Obj.Annotations) == 0 {
		b.WriteString(st.Dim.Render("  (none)"))
		b.WriteByte('\n')
	} else {
		keys := make([]string, 0, len(n.Obj.Annotations))
		for k := range n.Obj.Annotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			line := "  " + st.Label.Render(textsafe.Escape(k)+":") + " " + textsafe.Escape(n.Obj.Annotations[k])
			b.WriteString(ansi.Wrap(line, m.width, " "))
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// readyWhy is the kubelet's Ready condition's message, after a colon, or "".
func readyWhy(n *model.Node) string {
	if n.Obj == nil {
		return ""
	}
	for _, c := range n.Obj.Status.Conditions {
		if c.Type == "Ready" && c.Message != "" {
			return ": " + textsafe.Escape(c.Message)
		}
	}
	return ""
}

func stateWord(s phase.State) string {
	return [...]string{"not started", "in progress", "failed", "done"}[s]
}

// blockers draws the pods blocking n's drain. Of several, the one o, B, v and ctrl+k
// act on is marked ▸, and a line says how to choose another.
func (m *Model) blockers(b *strings.Builder, n *model.Node, style lipgloss.Style) {
	st := m.c.Styles
	bs := n.Blockers
	chosen := -1
	if len(bs) > 1 {
		chosen = m.blockerIndex(n)
	}
	podW := len("POD")
	for _, bl := range bs {
		podW = max(podW, len(bl.Pod))
	}
	b.WriteString("  ")
	var hb strings.Builder
	layout.Fit(&hb, "POD", podW)
	hb.WriteString("  PODDISRUPTIONBUDGETS / REFUSAL")
	b.WriteString(st.Header.Render(hb.String()))
	b.WriteByte('\n')
	for i, bl := range bs {
		if i == chosen {
			b.WriteString("▸ ")
		} else {
			b.WriteString("  ")
		}
		layout.Fit(b, bl.Pod, podW)
		b.WriteString("  ")
		if len(bl.Budgets) > 0 {
			b.WriteString(style.Render(textsafe.Escape(strings.Join(bl.Budgets, ", "))))
		} else {
			b.WriteString(style.Render(textsafe.Escape(bl.Reason)))
		}
		b.WriteByte('\n')
	}
	if chosen >= 0 {
		k := m.c.Keys
		acts := []string{k.Pod.Help().Key, k.Budgets.Help().Key}
		for _, a := range []key.Binding{k.EvictPod, k.DeletePod} {
			if a.Enabled() {
				acts = append(acts, a.Help().Key)
			}
		}
		line := fmt.Sprintf("  ▸ the pod %s and %s act on; %s chooses another", strings.Join(acts[:len(acts)-1], ", "), acts[len(acts)-1], k.NextBlocker.Help().Key)
		b.WriteString(st.Dim.Render(ansi.Truncate(line, m.width, layout.Ellipsis)))
		b.WriteByte('\n')
	}
}

// conditions draws the conditions table in the MachineConfigNode's own order, as
// oc describe lists them; long messages wrap within their column.
func (m *Model) conditions(b *strings.Builder, conds []metav1.Condition, now time.Time, degraded bool) {
	st := m.c.Styles
	typeW, reasonW := len("TYPE"), len("REASON")
	for _, c := range conds {
		typeW = max(typeW, len(c.Type))
		reasonW = max(reasonW, len(c.Reason))
	}
	cols := []layout.Column{
		{Min: 1},
		{Title: "TYPE", Min: typeW},
		{Title: "STATUS", Min: 7},
		{Title: "REASON", Min: min(reasonW, 14), Max: reasonW, Drop: 2},
		// The transition time goes before the message gets narrow; its age stays.
		{Title: "LAST TRANSITION", Min: 20, Drop: 3},
		{Title: "AGE", Min: 5, Drop: 1},
		{Title: "MESSAGE", Min: 48, Max: 1 << 16},
	}
	widths, _ := layout.Layout(cols, m.width, 1)
	msgCol := 0 // the cell where messages start, for their continuation lines
	for _, w := range widths[:len(widths)-1] {
		if w > 0 {
			msgCol += w + 1
		}
	}
	// Too narrow for a message column (80 columns and a long type): each message goes
	// under its condition, as wide as the pane, rather than cut at its edge.
	below := layout.Used(widths, 1) > m.width
	if below {
		widths[len(widths)-1] = 0
		msgCol = 4
	}
	var hb strings.Builder
	layout.Cells(&hb, widths, func(i, w int) { layout.Fit(&hb, cols[i].Title, w) })
	b.WriteString(st.Header.Render(hb.String()))
	b.WriteByte('\n')
	for _, c := range conds {
		s := phase.StateOf(c)
		if s == phase.Failed && !degraded {
			s = phase.InProgress // waiting: see model.Node.Waiting
		}
		var msgLines []string
		layout.Cells(b, widths, func(i, w int) {
			switch i {
			case 0:
				b.WriteByte(' ')
			case 1:
				layout.Fit(b, c.Type, w)
			case 2:
				var sb strings.Builder
				layout.Fit(&sb, string(c.Status), w)
				b.WriteString(st.State[s].Render(sb.String()))
			case 3:
				layout.Fit(b, c.Reason, w)
			case 4:
				layout.Fit(b, c.LastTransitionTime.UTC().Format(time.RFC3339), w)
			case 5:
				layout.Fit(b, layout.Age(now.Sub(c.LastTransitionTime.Time)), w)
			case 6:
				msgLines = strings.Split(ansi.Wrap(textsafe.Escape(c.Message), w, " "), "\n")
				msg := msgLines[0]
				if s == phase.Failed {
					msg = st.Error.Render(msg)
				}
				b.WriteString(msg)
			}
		})
		b.WriteByte('\n')
		if below && c.Message != "" {
			msgLines = append([]string{""}, strings.Split(ansi.Wrap(textsafe.Escape(c.Message), max(20, m.width-msgCol), " "), "\n")...)
		}
		for _, l := range msgLines[min(1, len(msgLines)):] {
			layout.Pad(b, msgCol)
			if s == phase.Failed {
				l = st.Error.Render(l)
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.Up, k.Down, k.PageDown, k.Retry, k.EvictPod, k.YAML, k.Describe, k.Back, k.Command, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{k.Navigation(), {k.Back, k.YAML, k.Describe, k.Logs, k.Pod, k.Budgets, k.NextBlocker, k.PrevBlocker}}
}

var _ common.Component = (*Model)(nil)

// est is the node's EST in its pool's rollout (core/estimate), for the end of the
// Phase line: "; EST ~7m". Empty for a node that is not to be updated, or Done. Its
// basis is in the pools pane's note and `mcotui status`: the line must fit 80 columns.
func (m *Model) est(n *model.Node, now time.Time) string {
	est, nodes, rolling := m.c.Store.Estimate(n.Pool, now)
	en, ok := nodes[n.Name]
	if !rolling || !ok || en.Phase == estimate.Finished || en.Phase == estimate.Failed {
		return ""
	}
	if d, ok := est.PerNode[n.Name]; ok && est.OK {
		return "; EST ~" + estimate.Round(d)
	}
	if en.Retrying {
		// When the agent's next try succeeds is not known (core/estimate).
		return m.c.Styles.Dim.Render("; EST unknown (retrying)")
	}
	return m.c.Styles.Dim.Render("; EST unknown")
}
