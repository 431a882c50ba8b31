// Package pools is the pools pane: each MachineConfigPool as `oc get mcp` shows it, with
// a progress bar, whether it is paused, its maxUnavailable, and how many of its nodes
// are updating and degraded right now; under them, the messages of the selected pool's
// degraded conditions and its rollback pin.
package pools

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// Columns: oc get mcp's, then mcotui's.
const (
	colMark = iota
	colName
	colConfig
	colUpdated
	colUpdating
	colDegraded
	colMachines
	colReady
	colUpdatedN
	colDegradedN
	colAge
	colProgress
	colPaused
	colMaxUnavail
	colNow
	colEst
	numCols
)

// barWidth is the progress bar's length in cells.
const barWidth = 10

// headerLines is the title and the column header.
const headerLines = 2

// Model is the pools pane.
type Model struct {
	c       *common.Common
	focused bool

	width, height int
	cursor        int
	scope         string // the pool the grid shows, marked in the list

	widths []int
	short  bool
	header string
	// noteLines is how many lines the notes under the pools take: as many as the pool
	// with the most has, so that moving the cursor does not resize the pane.
	noteLines int
}

// New returns the pools pane over c.Store.
func New(c *common.Common) *Model {
	m := &Model{c: c}
	m.relayout()
	return m
}

// SetFocused tells the pane whether keys go to it.
func (m *Model) SetFocused(f bool) { m.focused = f }

// SetScope marks the pool the grid shows ("" for all).
func (m *Model) SetScope(pool string) { m.scope = pool }

// SetSize implements common.Component.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.relayout()
}

// Height is the height the pane needs to show every pool, and the notes of the one
// with the most.
func (m *Model) Height() int { return headerLines + max(1, len(m.c.Store.Pools())) + m.noteLines }

// maxNotes bounds the lines under the pools that say what is wrong with the selected
// pool.
const maxNotes = 3

// note is one line under the pools about the selected pool.
type note struct {
	style lipgloss.Style
	text  string
}

// notes are what the pools' columns cannot say about p: the messages of its Degraded,
// NodeDegraded and RenderDegraded conditions when True (oc prints only True/False; the
// message says which node or MachineConfig, and why), and a rollback pin with the way
// out of it.
func (m *Model) notes(p *model.Pool) []note {
	if p == nil || p.Obj == nil {
		return nil
	}
	st := m.c.Styles
	var out []note
	seen := map[string]bool{}
	for _, t := range []mcfgv1.MachineConfigPoolConditionType{
		mcfgv1.MachineConfigPoolRenderDegraded, mcfgv1.MachineConfigPoolNodeDegraded, mcfgv1.MachineConfigPoolDegraded,
	} {
		for _, c := range p.Obj.Status.Conditions {
			// Degraded repeats the message of the condition it sums up: said once.
			if c.Type != t || c.Status != corev1.ConditionTrue || seen[c.Message] {
				continue
			}
			text := c.Message
			if text == "" {
				text = c.Reason
			}
			if text == "" {
				continue
			}
			seen[c.Message] = true
			out = append(out, note{st.Error, string(t) + ": " + text})
		}
	}
	// The rollout policy: what holds the rollout (the controller's RolloutHeld, which
	// names held nodes too), else what the policy does now ("next window in 3h12m").
	held := false
	for _, c := range p.Obj.Status.Conditions {
		if c.Type == policy.HeldCondition && c.Status == corev1.ConditionTrue {
			held = true
			out = append(out, note{st.Warn, string(c.Type) + ": " + c.Message})
		}
	}
	if pol, err := policy.FromPool(p.Obj); err != nil {
		out = append(out, note{st.Error, "rollout policy: " + err.Error()})
	} else if sum := pol.Summary(m.c.Clock.Now()); sum != "" && !held {
		out = append(out, note{st.Dim, "rollout policy: " + sum})
	}
	if behind := p.StatusBehind(m.c.Store.Counts(p.Name)); len(behind) > 0 {
		// Said before the pin and the policy: it is why the columns above may be wrong.
		out = append([]note{{st.Warn, "status behind its nodes (* above): " + strings.Join(behind, "; ")}}, out...)
	}
	if to := p.Obj.Annotations[rollout.RollbackToAnnotation]; to != "" {
		out = append(out, note{st.Warn, "pinned to " + to + " by a rollback: " + m.c.Keys.Rollback.Help().Key + " removes the pin, and the pool rolls forward"})
	}
	return out[:min(len(out), maxNotes)]
}

// streamNote says which OS image stream the pool uses and where that comes from
// (osstream.From, as `mcotui status` says it), and the stream its status reports, which
// MCO sets only once the pool is updated onto the stream's image. Nothing for a pool
// on the cluster's default stream that reports none: a cluster without OS streams.
func (m *Model) streamNote(p *model.Pool) (note, bool) {
	if p == nil || p.Obj == nil {
		return note{}, false
	}
	var worker *mcfgv1.MachineConfigPool
	if w := m.c.Store.Pool("worker"); w != nil {
		worker = w.Obj
	}
	name, from := osstream.From(p.Obj, worker)
	running := p.Obj.Status.OSImageStream.Name
	if name == "" && running == "" {
		return note{}, false
	}
	text := "OS image stream " + name + " (" + from + ")"
	if from == osstream.FromDefault {
		text = "OS image stream: the cluster's default"
	}
	switch {
	case running == "":
		text += "; status reports none yet (not updated onto it, degraded, or osImageURL overridden)"
	case running != name:
		text += "; status reports " + running
	}
	return note{m.c.Styles.Dim, text}, true
}

// updatingNote is the selected pool's Updating message, shown where it has no note,
// with its remaining-time estimate and the estimate's basis.
func (m *Model) updatingNote(p *model.Pool) []note {
	if p == nil || p.Obj == nil {
		return nil
	}
	for _, c := range p.Obj.Status.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdating && c.Message != "" {
			text := string(c.Type) + ": " + c.Message
			if est, _, rolling := m.c.Store.Estimate(p.Name, m.c.Clock.Now()); rolling && est.Timed() {
				text = "remaining " + est.String() + "; " + text
			}
			return []note{{m.c.Styles.Dim, text}}
		}
	}
	return nil
}

// Sync applies one batch of store changes.
func (m *Model) Sync(ch model.Changes) {
	if ch.Pools {
		m.relayout()
		m.cursor = max(0, min(m.cursor, len(m.c.Store.Pools())-1))
	}
}

// Selected is the pool under the cursor, or nil.
func (m *Model) Selected() *model.Pool {
	ps := m.c.Store.Pools()
	if m.cursor < 0 || m.cursor >= len(ps) {
		return nil
	}
	return ps[m.cursor]
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	n := len(m.c.Store.Pools())
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !m.focused {
			return nil
		}
		switch {
		case key.Matches(msg, k.Up):
			m.cursor = max(0, m.cursor-1)
		case key.Matches(msg, k.Down):
			m.cursor = min(n-1, m.cursor+1)
		case key.Matches(msg, k.Top, k.PageUp):
			m.cursor = 0
		case key.Matches(msg, k.Bottom, k.PageDown):
			m.cursor = max(0, n-1)
		case key.Matches(msg, k.Open):
			if p := m.Selected(); p != nil {
				return common.Cmd(common.SelectPoolMsg{Pool: p.Name})
			}
		case key.Matches(msg, k.AllPools):
			return common.Cmd(common.SelectPoolMsg{})
		}
	case tea.MouseClickMsg:
		if msg.Button == tea.MouseLeft && msg.Y >= headerLines && msg.Y-headerLines < n {
			m.cursor = msg.Y - headerLines
			return common.Cmd(common.SelectPoolMsg{Pool: m.Selected().Name})
		}
	}
	return nil
}

func (m *Model) relayout() {
	nameW, cfgW := 4, 6
	m.noteLines = 0
	for _, p := range m.c.Store.Pools() {
		nameW = max(nameW, len(p.Name))
		cfgW = max(cfgW, len(p.Config))
		n := len(m.notes(p))
		if _, ok := m.streamNote(p); ok {
			n++
		}
		m.noteLines = max(m.noteLines, n)
	}
	// Narrow terminals lose first what another column also says: AGE, CONFIG (the grid
	// shows each node's), the counts PROGRESS repeats.
	cols := [numCols]layout.Column{
		colMark: {Min: 1},
		colName: {Title: "NAME", Min: nameW},
		// CONFIG is whole or not shown: a hash at one width and a name at another would
		// read as two configs.
		colConfig:     {Title: "CONFIG", Min: cfgW, Drop: 8},
		colUpdated:    {Title: "UPDATED", Min: 5},
		colUpdating:   {Title: "UPDATING", Min: 5},
		colDegraded:   {Title: "DEGRADED", Min: 5},
		colMachines:   {Title: "MACHINECOUNT", Short: "MACHINES", Drop: 6},
		colReady:      {Title: "READYMACHINECOUNT", Short: "READY", Drop: 7},
		colUpdatedN:   {Title: "UPDATEDMACHINECOUNT", Short: "UPDATED#", Drop: 5},
		colDegradedN:  {Title: "DEGRADEDMACHINECOUNT", Short: "DEGRADED#", Drop: 3},
		colAge:        {Title: "AGE", Min: 5, Drop: 9},
		colProgress:   {Title: "PROGRESS", Min: barWidth + 6},
		colPaused:     {Title: "PAUSED", Min: 5},
		colMaxUnavail: {Title: "MAXUNAVAILABLE", Short: "MAXUNAV", Min: 3, Drop: 4},
		colNow:        {Title: "UPDATINGNOW", Short: "NOW"},
		// The remaining-time estimate (core/estimate); its basis is in the note.
		colEst: {Title: "EST", Min: 6, Drop: 10},
	}
	m.widths, m.short = layout.Layout(cols[:], m.width, 1)
	var b strings.Builder
	m.cells(&b, func(i, w int) { layout.Fit(&b, layout.Title(cols[i], m.short), w) })
	var hb strings.Builder
	layout.Fit(&hb, b.String(), m.width)
	m.header = m.c.Styles.Header.Render(hb.String())
}

// cells calls f for each shown column, writing the gaps between them (layout.Cells).
func (m *Model) cells(b *strings.Builder, f func(col, width int)) { layout.Cells(b, m.widths, f) }

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	st := m.c.Styles
	var b strings.Builder
	title := fmt.Sprintf(" Pools  %d", len(m.c.Store.Pools()))
	style := st.Title
	if m.focused {
		style = st.TitleFocused
	}
	var tb strings.Builder
	layout.Fit(&tb, title, m.width)
	b.WriteString(style.Render(tb.String()))
	b.WriteByte('\n')
	b.WriteString(m.header)
	pools := m.c.Store.Pools()
	if len(pools) == 0 {
		b.WriteString("\n" + st.Dim.Render("No MachineConfigPools yet."))
	}
	now := m.c.Clock.Now()
	for i, p := range pools {
		b.WriteByte('\n')
		line := m.row(p, now, i == m.cursor)
		if i == m.cursor {
			sel := st.SelectedDim
			if m.focused {
				sel = st.Selected
			}
			var lb strings.Builder
			layout.Fit(&lb, line, m.width)
			line = sel.Render(lb.String())
		}
		b.WriteString(line)
	}
	if m.noteLines > 0 {
		sel := m.Selected()
		notes := m.notes(sel)
		if len(notes) == 0 {
			notes = m.updatingNote(sel)
		}
		if n, ok := m.streamNote(sel); ok {
			notes = append(notes, n)
		}
		for i := range m.noteLines {
			b.WriteByte('\n')
			if i >= len(notes) {
				continue
			}
			var lb strings.Builder
			layout.Fit(&lb, " "+sel.Name+" "+notes[i].text, m.width)
			b.WriteString(notes[i].style.Render(lb.String()))
		}
	}
	return layout.Lines(b.String(), m.height)
}

// row draws a pool; plain (no colours inside) when it is the selected row, which is
// drawn in one style.
func (m *Model) row(p *model.Pool, now time.Time, plain bool) string {
	st := m.c.Styles
	paint := func(style lipgloss.Style, s string, w int) string {
		var b strings.Builder
		layout.Fit(&b, s, w)
		if plain {
			return b.String()
		}
		return style.Render(b.String())
	}
	counts := m.c.Store.Counts(p.Name)
	var b strings.Builder
	m.cells(&b, func(i, w int) {
		switch i {
		case colMark:
			mark := " "
			if p.Name == m.scope {
				mark = "▸"
			}
			b.WriteString(mark)
		case colName:
			layout.Fit(&b, p.Name, w)
		case colConfig:
			layout.Fit(&b, p.Config, w)
		case colUpdated:
			b.WriteString(paint(condStyle(st, p.Updated, "True"), p.Updated, w))
		case colUpdating:
			// An image mode pool waiting on its OS image build says so, not just True.
			if word, ok := poolWait(p); ok {
				style := st.Warn
				if word == "failed" {
					style = st.Error
				}
				b.WriteString(paint(style, word, w))
				break
			}
			b.WriteString(paint(condStyle(st, p.Updating, ""), p.Updating, w))
		case colDegraded:
			b.WriteString(paint(condStyle(st, p.Degraded, "False"), p.Degraded, w))
		case colMachines:
			// A count the nodes disagree with is marked: the pool's status is behind.
			if int(p.MachineCount) != counts.Nodes {
				b.WriteString(paint(st.Warn, itoa(p.MachineCount)+"*", w))
				return
			}
			layout.Fit(&b, itoa(p.MachineCount), w)
		case colReady:
			layout.Fit(&b, itoa(p.ReadyCount), w)
		case colUpdatedN:
			if int(p.UpdatedCount) != counts.DoneNow {
				b.WriteString(paint(st.Warn, itoa(p.UpdatedCount)+"*", w))
				return
			}
			layout.Fit(&b, itoa(p.UpdatedCount), w)
		case colDegradedN:
			style := st.Dim
			if p.DegradedCount > 0 {
				style = st.Error
			}
			text := itoa(p.DegradedCount)
			if int(p.DegradedCount) != counts.DegradedNow {
				text, style = text+"*", st.Warn
			}
			b.WriteString(paint(style, text, w))
		case colAge:
			layout.Fit(&b, layout.Age(now.Sub(p.Created)), w)
		case colProgress:
			m.bar(&b, p, plain)
			// The pool's own counts, starred as UPDATED# and MACHINES are when the nodes
			// disagree: on a narrow screen this is the only count of them shown.
			text := " " + itoa(p.UpdatedCount)
			if int(p.UpdatedCount) != counts.DoneNow {
				text += "*"
			}
			text += "/" + itoa(p.MachineCount)
			if int(p.MachineCount) != counts.Nodes {
				text += "*"
			}
			layout.Fit(&b, text, w-barWidth)
		case colPaused:
			if p.Paused {
				b.WriteString(paint(st.Paused, "true", w))
			} else {
				layout.Fit(&b, "false", w)
			}
		case colMaxUnavail:
			layout.Fit(&b, p.MaxUnavailable, w)
		case colEst:
			est, _, rolling := m.c.Store.Estimate(p.Name, now)
			switch {
			case !rolling:
				layout.Fit(&b, "", w)
			case !est.Timed():
				// Unknown, or only failed and retrying nodes going: no "~0s".
				b.WriteString(paint(st.Dim, "?", w))
			default:
				layout.Fit(&b, "~"+estimate.Round(est.Remaining), w)
			}
		case colNow:
			style := st.Warn
			if counts.UpdatingNow == 0 {
				style = st.Dim
			}
			b.WriteString(paint(style, strconv.Itoa(counts.UpdatingNow), w))
		}
	})
	return b.String()
}

// condStyle colours a condition's status: good when it is good, an error when it is
// the bad value ("True" for Degraded), a warning otherwise.
func condStyle(st *styles.Styles, status, good string) lipgloss.Style {
	switch {
	case status == good:
		return st.OK
	case good == "False" && status == "True":
		return st.Error
	case good == "" && status == "True":
		return st.Warn
	case good == "":
		return st.Dim
	}
	return st.Warn
}

// bar draws the pool's progress: updated machines of all machines, red when the pool is
// degraded and magenta when paused, so a stalled rollout stands out.
func (m *Model) bar(b *strings.Builder, p *model.Pool, plain bool) {
	st := m.c.Styles
	full := int(p.Progress()*barWidth + 0.5)
	if p.UpdatedCount < p.MachineCount {
		full = min(full, barWidth-1) // never look finished before it is
	}
	cell := st.BarFull
	switch {
	case plain:
		cell = styles.BarFull
	case p.Degraded == "True":
		cell = st.BarDegraded
	case p.Paused:
		cell = st.BarPaused
	}
	empty := st.BarEmpty
	if plain {
		empty = styles.BarEmpty
	}
	for i := range barWidth {
		if i < full {
			b.WriteString(cell)
		} else {
			b.WriteString(empty)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.Open, k.Pause, k.MaxUnavailable, k.Preview, k.Rollback, k.Drive, k.Configs, k.BootImages, k.NextPane, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap. The pool actions are listed by the root, which
// handles them.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}, {k.Open, k.YAML, k.Describe, k.AllPools, k.Preview, k.Configs}}
}

var _ common.Component = (*Model)(nil)

// poolWait is imagemode.PoolWait of p's object, when the store has it.
func poolWait(p *model.Pool) (string, bool) {
	if p.Obj == nil {
		return "", false
	}
	return imagemode.PoolWait(p.Obj)
}
