// Package grid is the node phase grid: a row per node, a column per MachineConfigNode
// phase, with a glyph per status, the node's configs and its time in the current phase.
//
// It is built for 10,000 nodes: the sorted, filtered rows are a model.List kept up to
// date by the root's batches (never recomputed in View), View draws only the rows on
// screen, and each row's text is rendered once per change of its node and reused until
// the node or the layout changes. Only the selected row and the ages (which move with
// the clock) are drawn fresh on each frame.
package grid

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// Column indexes in Model.widths.
const (
	colName    = 0
	colPool    = 1
	colStatus  = 2 // readiness, as kubectl get nodes' STATUS
	colPhase0  = 3
	colAge     = colPhase0 + model.NumPhases
	colCurrent = colAge + 1
	colDesired = colAge + 2
	colPinned  = colAge + 3 // shown once a node has pinned images (pinned.go)
	numCols    = colPinned + 1
)

// Phase column titles: three letters, or two on narrow terminals. Each column holds one
// glyph, so `oc get machineconfignodes -o wide`'s words (PREPARED, UNCORDONED) would
// spend some hundred columns of a wide terminal on headers; the detail names them.
var phaseTitles = [model.NumPhases][2]string{
	{"PRE", "PR"}, {"COR", "CO"}, {"DRN", "DR"}, {"APL", "AP"},
	{"PST", "PA"}, {"RBT", "RB"}, {"UNC", "UC"}, {"UPD", "UP"},
	{"RES", "RS"}, {"DEG", "DG"},
}

// Widths of the STATUS column's long and short forms: "NotReady,SchedulingDisabled" and
// "NotReady,SD".
const (
	longStatusW  = 27
	shortStatusW = 11
)

// updatedPhase is the Updated phase's index, where a node behind its pool's target is
// marked.
const updatedPhase = 7

// headerLines is the title and the column header above the rows.
const headerLines = 2

// wheelRows is how far one mouse wheel notch scrolls.
const wheelRows = 3

// Model is the grid pane.
type Model struct {
	c       *common.Common
	list    *model.List
	focused bool

	width, height int
	cursor        int    // selected row
	offset        int    // first row on screen
	selected      string // name of the selected node, kept across re-sorts and bursts

	widths []int
	short  bool
	clip   bool // the columns are wider than the pane (a tiny terminal): cut each row
	header string
	gen    uint64 // layout generation: cached rows of an older one are stale

	// statusLong: the STATUS column is wide enough for kubectl's words
	// ("Ready,SchedulingDisabled"); else it shows the short form ("Ready,SD").
	statusLong bool
	// cfgW and hashW are the config widths the columns were sized for (configWidths).
	cfgW, hashW int

	cache map[string]row
	sel   selRow // the selected row, drawn in one style
	age   []byte // scratch for formatting ages

	titleKey titleKey
	titleStr string

	// syncs counts the batches of changes, and pace is the rollouts' pace as of the
	// batch paceSyncs and the second paceAt: computing it reads every node.
	syncs     uint64
	paceSyncs uint64
	paceAt    time.Time
	pace      []model.Pace

	pinned bool // a node has pinned images: the PINNED column is shown
}

// selRow is the selected row's rendering, in the selection style.
type selRow struct {
	row
	focused bool
}

// titleKey is everything the title line shows.
type titleKey struct {
	pool, filter string
	sort         model.SortKey
	desc         bool
	shown, total int
	width        int
	focused      bool
	gen          uint64
	pace         string
}

// row is a node's rendered row around its age column, which is drawn per frame.
type row struct {
	node      *model.Node
	gen       uint64
	pre, post string
}

// New returns a grid of every node of c.Store, by name.
func New(c *common.Common) *Model {
	m := &Model{c: c, list: model.NewList(c.Store), cache: map[string]row{}}
	m.scanPinned()
	m.relayout()
	return m
}

// SetFocused tells the grid whether keys go to it, which changes how the selection is
// drawn.
func (m *Model) SetFocused(f bool) { m.focused = f }

// SetSize implements common.Component. It also re-reads the styles, which the root
// replaces only together with a resize.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.relayout()
	m.clamp()
}

// Query is what the grid shows.
func (m *Model) Query() model.Query { return m.list.Query() }

// SetQuery changes what the grid shows, keeping the selected node selected if it still
// is shown.
func (m *Model) SetQuery(q model.Query) {
	m.list.SetQuery(q)
	m.relayout()
	m.reselect()
}

// Len is the number of rows shown (after scope and filter).
func (m *Model) Len() int { return m.list.Len() }

// Selected is the selected node, or nil when no row is shown.
func (m *Model) Selected() *model.Node {
	if m.cursor < 0 || m.cursor >= m.list.Len() {
		return nil
	}
	return m.list.At(m.cursor)
}

// Select puts the cursor on the named node and reports whether it is shown (in scope
// and matching the filter).
func (m *Model) Select(name string) bool {
	i := m.list.Index(name)
	if i < 0 {
		return false
	}
	m.cursor, m.selected = i, name
	m.clamp()
	return true
}

// Sync applies one batch of store changes.
func (m *Model) Sync(ch model.Changes) {
	m.syncs++
	if ch.Pools {
		// A new rendered config may be longer than the columns were sized for.
		if c, h := m.configWidths(); c != m.cfgW || h != m.hashW {
			defer m.relayout()
		}
	}
	if len(ch.Nodes) == 0 {
		return
	}
	nw, pw := m.list.NameWidth(), m.list.PoolWidth()
	pre, suf := m.list.SharedEnds()
	m.list.Sync(ch.Nodes)
	pre2, suf2 := m.list.SharedEnds()
	if m.notePinned(ch.Nodes) || m.list.NameWidth() != nw || m.list.PoolWidth() != pw || pre != pre2 || suf != suf2 {
		m.relayout()
	}
	m.reselect()
}

// configWidths are the widest rendered config name of the pools, whole and by hash.
func (m *Model) configWidths() (whole, hash int) {
	whole, hash = 12, 12
	for _, p := range m.c.Store.Pools() {
		for _, cfg := range []string{p.Config, p.Target} {
			whole = max(whole, len(cfg))
			hash = max(hash, len(layout.Config(cfg, p.Name, 0)))
		}
	}
	return whole, hash
}

// reselect puts the cursor back on the selected node after rows moved, or keeps it in
// range when the node left.
func (m *Model) reselect() {
	if m.selected != "" {
		if i := m.list.Index(m.selected); i >= 0 {
			m.cursor = i
		}
	}
	m.clamp()
}

func (m *Model) visible() int { return max(0, m.height-headerLines) }

// clamp keeps the cursor on a row and on screen.
func (m *Model) clamp() {
	n := m.list.Len()
	m.cursor = max(0, min(m.cursor, n-1))
	vis := m.visible()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if vis > 0 && m.cursor >= m.offset+vis {
		m.offset = m.cursor - vis + 1
	}
	m.offset = max(0, min(m.offset, n-vis))
	if sel := m.Selected(); sel != nil {
		m.selected = sel.Name
	}
}

func (m *Model) move(delta int) {
	m.cursor += delta
	m.clamp()
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !m.focused {
			return nil
		}
		vis := max(1, m.visible())
		switch {
		case key.Matches(msg, k.Up):
			m.move(-1)
		case key.Matches(msg, k.Down):
			m.move(1)
		case key.Matches(msg, k.PageUp):
			m.move(-vis)
		case key.Matches(msg, k.PageDown):
			m.move(vis)
		case key.Matches(msg, k.HalfUp):
			m.move(-vis / 2)
		case key.Matches(msg, k.HalfDown):
			m.move(vis / 2)
		case key.Matches(msg, k.Top):
			m.move(-m.list.Len())
		case key.Matches(msg, k.Bottom):
			m.move(m.list.Len())
		case key.Matches(msg, k.Sort):
			q := m.list.Query()
			q.Sort = q.Sort.Next()
			m.SetQuery(q)
		case key.Matches(msg, k.Reverse):
			q := m.list.Query()
			q.Desc = !q.Desc
			m.SetQuery(q)
		case key.Matches(msg, k.SortBy[:]...):
			q := m.list.Query()
			for i, b := range k.SortBy {
				if !key.Matches(msg, b) {
					continue
				}
				if q.Sort == model.SortKey(i) {
					q.Desc = !q.Desc // the same column again: the other way
				} else {
					q.Sort, q.Desc = model.SortKey(i), false
				}
			}
			m.SetQuery(q)
		case key.Matches(msg, k.AllPools):
			return common.Cmd(common.SelectPoolMsg{})
		case key.Matches(msg, k.Open):
			if n := m.Selected(); n != nil {
				return common.Cmd(common.OpenNodeMsg{Name: n.Name})
			}
		}
	case tea.MouseWheelMsg:
		// The wheel scrolls the view and drags the selection along only as far as it
		// must to stay on screen, as in a pager.
		switch msg.Button {
		case tea.MouseWheelUp:
			m.scroll(-wheelRows)
		case tea.MouseWheelDown:
			m.scroll(wheelRows)
		}
	case tea.MouseClickMsg:
		// Y is relative to the pane (the root translates it).
		if msg.Button == tea.MouseLeft && msg.Y >= headerLines {
			if i := m.offset + msg.Y - headerLines; i < m.list.Len() {
				m.cursor = i
				m.clamp()
			}
		}
	}
	return nil
}

func (m *Model) scroll(delta int) {
	vis := m.visible()
	m.offset = max(0, min(m.offset+delta, m.list.Len()-vis))
	m.cursor = max(m.offset, min(m.cursor, m.offset+vis-1))
	m.clamp()
}

// relayout sizes the columns for the width and the widest name and pool, and renders the
// header. Cached rows of the previous layout go stale.
//
// Columns size to their content. The layouts are tried from the most complete down: every
// column whole (long or short titles), then configs by hash alone, then the name whole
// with the least important columns dropped (the clock first, then DESIRED, CURRENT and
// POOL), and last a cut name. The node's health (its name, readiness and phases) is
// never dropped.
func (m *Model) relayout() {
	nameW := max(m.list.NameWidth(), 4)
	m.cfgW, m.hashW = m.configWidths()
	cfgW, hashW := m.cfgW, m.hashW
	// A name cut to its own part (what the rows do not share, layout.Name) and a little
	// of the shared start still tells the rows apart.
	pre, suf := m.list.SharedEnds()
	ownW := min(nameW, max(16, nameW-pre-suf+4))
	base := func(nameMin, cfgMin, cfgMax int, statusMin ...int) []layout.Column {
		cols := make([]layout.Column, numCols)
		cols[colName] = layout.Column{Title: "NAME", Min: nameMin, Max: nameW}
		cols[colPool] = layout.Column{Title: "POOL", Min: max(m.list.PoolWidth(), 4), Drop: 3}
		cols[colStatus] = layout.Column{Title: "STATUS", Min: shortStatusW, Max: longStatusW}
		if len(statusMin) > 0 {
			cols[colStatus].Min = statusMin[0]
		}
		for i := range model.NumPhases {
			cols[colPhase0+i] = layout.Column{Title: phaseTitles[i][0], Short: phaseTitles[i][1], Min: 1}
		}
		// How long a node has been in its phase is what an incident asks first: the
		// last column to go.
		cols[colAge] = layout.Column{Title: "IN PHASE", Min: 5, Drop: 2}
		cols[colCurrent] = layout.Column{Title: "CURRENT", Min: cfgMin, Max: cfgMax, Drop: 5}
		cols[colDesired] = layout.Column{Title: "DESIRED", Min: cfgMin, Max: cfgMax, Drop: 4}
		if m.pinned {
			cols[colPinned] = pinnedColumn
		}
		// Room for the sort arrow after each sortable column's title.
		for _, i := range []int{colName, colPool, colStatus, colAge, colCurrent, colDesired} {
			cols[i].Min = max(cols[i].Min, len(cols[i].Title)+1)
			cols[i].Max = max(cols[i].Max, cols[i].Min)
		}
		return cols
	}
	var cols []layout.Column
	for i, cand := range [][]layout.Column{
		// kubectl's STATUS words, configs by hash (the hash is what tells two configs
		// apart; the POOL column says the rest), grown to whole names if there is
		// room left.
		base(nameW, hashW, cfgW, longStatusW),
		base(nameW, hashW, cfgW),
		base(ownW, hashW, hashW),
		base(ownW, 12, hashW),
		base(16, 8, hashW),
		// Narrow: columns dropped, IN PHASE last; names cut to 16 cells or more.
		base(16, 8, hashW),
		base(min(ownW, 12), 8, hashW),
	} {
		cols = cand
		if !m.pinned {
			cols = cols[:colPinned]
		}
		m.widths, m.short = layout.Layout(cols, m.width, 1)
		whole := true
		for _, w := range m.widths {
			whole = whole && w > 0
		}
		if !m.pinned {
			m.widths = append(m.widths, 0)
		}
		// The first five must keep every column; the sixth may drop columns but must
		// fit; the last is taken whatever it gives.
		if (i < 5 && whole) || (i == 5 && layout.Used(m.widths, 1) <= m.width) {
			break
		}
	}
	m.statusLong = m.widths[colStatus] >= longStatusW
	used := layout.Used(m.widths, 1)
	m.clip = used > m.width

	var b strings.Builder
	m.cells(&b, func(i int, w int) {
		if i >= colPhase0 && i < colAge {
			// Centre phase titles over their glyphs.
			t := layout.Title(cols[i], m.short)
			left := (w - len(t)) / 2
			layout.Pad(&b, left)
			layout.Fit(&b, t, w-left)
			return
		}
		t := layout.Title(cols[i], m.short)
		if i == sortColumn(m.list.Query().Sort) && len(t) < w {
			t += columnArrow(m.list.Query().Sort, m.list.Query().Desc)
		}
		layout.Fit(&b, t, w)
	})
	m.header = m.c.Styles.Header.Render(padTo(ansi.Truncate(b.String(), m.width, ""), m.width))
	m.gen++
	clear(m.cache)
}

// cells calls f for each shown column, writing the gaps between them (layout.Cells).
func (m *Model) cells(b *strings.Builder, f func(col, width int)) { layout.Cells(b, m.widths, f) }

func padTo(s string, w int) string {
	var b strings.Builder
	layout.Fit(&b, s, w)
	return b.String()
}

// render draws a node's row but for its age, plain (for the selected row, drawn in one
// style) or with the state colours.
func (m *Model) render(n *model.Node, plain bool) (pre, post string) {
	st := m.c.Styles
	var b strings.Builder
	b.Grow(m.width * 2)
	var cut int
	m.cells(&b, func(i, w int) {
		switch {
		case i == colName:
			pre, suf := m.list.SharedEnds()
			if n.Degraded && !plain {
				var nb strings.Builder
				layout.FitName(&nb, n.Name, w, pre, suf)
				b.WriteString(st.Error.Render(nb.String()))
				return
			}
			layout.FitName(&b, n.Name, w, pre, suf)
		case i == colPool:
			layout.Fit(&b, n.Pool, w)
		case i == colStatus:
			text := n.ShortStatus()
			if m.statusLong {
				text = n.Status()
			}
			if n.Ready != "Ready" && n.Ready != "" && !plain {
				var nb strings.Builder
				layout.Fit(&nb, text, w)
				b.WriteString(st.Warn.Render(nb.String()))
				return
			}
			layout.Fit(&b, text, w)
		case i < colAge:
			ph := i - colPhase0
			c := n.Cells[ph]
			g := styles.GlyphAbsent
			if ph == updatedPhase && n.Behind && n.Stage == rollout.StagePulling {
				// Behind, and downloading the target's OS image before its drain.
				g = styles.GlyphStaging
				if !plain {
					g = st.Staging
				}
			} else if ph == updatedPhase && n.Behind && n.Stage == rollout.StageRetrying {
				g = styles.GlyphWaiting
				if !plain {
					g = st.Waiting
				}
			} else if ph == updatedPhase && n.Behind {
				// Its own config is applied, but the pool's target is not: waiting for
				// the rollout to reach it.
				g = styles.GlyphBehind
				if !plain {
					g = st.Behind
				}
			} else if c.Waiting {
				g = styles.GlyphWaiting
				if !plain {
					g = st.Waiting
				}
			} else if c.Present {
				if plain {
					g = styles.PlainGlyph(c.State)
				} else {
					g = st.Glyph[c.State]
				}
			}
			layout.Center(&b, g, w)
		case i == colAge:
			cut = b.Len()
		case i == colCurrent:
			layout.FitName(&b, layout.Config(n.Current, n.Pool, w), w, 0, 0)
		case i == colDesired:
			if n.Desired != n.Current && !plain {
				var nb strings.Builder
				layout.FitName(&nb, layout.Config(n.Desired, n.Pool, w), w, 0, 0)
				b.WriteString(st.Warn.Render(nb.String()))
				return
			}
			layout.FitName(&b, layout.Config(n.Desired, n.Pool, w), w, 0, 0)
		case i == colPinned:
			m.writePinned(&b, n, w, plain)
		}
	})
	s := b.String()
	if m.widths[colAge] == 0 {
		return s, ""
	}
	return s[:cut], s[cut:]
}

// writeAge writes the age cell of n into b.
func (m *Model) writeAge(b *strings.Builder, n *model.Node, now time.Time) {
	w := m.widths[colAge]
	if w == 0 {
		return
	}
	m.age = m.age[:0]
	switch {
	case n.Retry.Attempt > 0:
		// A node the agent retries shows when the next try is due rather than how long
		// it has been in its phase: "is it still trying, and when" is what an operator
		// looks for first (the detail view has both).
		r := n.ShortRetry(now)
		if len(r) > w {
			r = strings.Replace(r, " in ", " ", 1) // "r3 5m30s"
		}
		m.age = append(m.age, r...)
	case n.Behind && n.Stage == rollout.StagePulling && n.StagePercent >= 0:
		// Downloading its next OS image before its drain (⇩ in UPDATED): how far.
		m.age = strconv.AppendInt(m.age, int64(n.StagePercent), 10)
		m.age = append(m.age, '%')
	case n.Phase >= 0 && !n.Since.IsZero():
		m.age = layout.AppendAge(m.age, now.Sub(n.Since))
	}
	// The age is ASCII: pad by bytes.
	if len(m.age) > w {
		m.age = m.age[:w]
	}
	b.Write(m.age)
	layout.Pad(b, w-len(m.age))
}

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	var b strings.Builder
	vis := m.visible()
	b.Grow((vis + headerLines) * (m.width*3 + 1))
	b.WriteString(m.title())
	if m.height > 1 {
		b.WriteByte('\n')
		b.WriteString(m.header)
	}
	rows := m.list.Rows(m.offset, m.offset+vis)
	if len(rows) == 0 && vis > 0 {
		b.WriteByte('\n')
		b.WriteString(m.c.Styles.Dim.Render(m.empty()))
		rows = nil
		vis--
	}
	// Rows scrolled through since the cache was last cut are not worth keeping; bounding
	// the cache by the screen keeps memory flat however far one scrolls.
	if len(m.cache) > 4*vis+64 {
		clear(m.cache)
	}
	now := m.c.Clock.Now()
	for i, n := range rows {
		b.WriteByte('\n')
		if m.clip {
			// Too narrow for the columns: draw and cut each row; no cache, as a screen
			// this small shows a handful of rows.
			var rb strings.Builder
			if m.offset+i == m.cursor {
				m.writeSelected(&rb, n, now)
			} else {
				pre, post := m.render(n, false)
				rb.WriteString(pre)
				m.writeAge(&rb, n, now)
				rb.WriteString(post)
			}
			b.WriteString(ansi.Truncate(rb.String(), m.width, ""))
			continue
		}
		if m.offset+i == m.cursor {
			m.writeSelected(&b, n, now)
			continue
		}
		r, ok := m.cache[n.Name]
		if !ok || r.node != n || r.gen != m.gen {
			r.pre, r.post = m.render(n, false)
			r.node, r.gen = n, m.gen
			m.cache[n.Name] = r
		}
		b.WriteString(r.pre)
		m.writeAge(&b, n, now)
		b.WriteString(r.post)
	}
	for range vis - len(rows) {
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) writeSelected(b *strings.Builder, n *model.Node, now time.Time) {
	style := m.c.Styles.SelectedDim
	if m.focused {
		style = m.c.Styles.Selected
	}
	r := &m.sel
	if r.node != n || r.gen != m.gen || r.focused != m.focused {
		pre, post := m.render(n, true)
		// The row's parts are styled apart, the age between them drawn per frame in the
		// same style; the selection reaches the pane's right edge.
		if fill := m.width - ansi.StringWidth(pre) - m.widths[colAge] - ansi.StringWidth(post); fill > 0 {
			post += strings.Repeat(" ", fill)
		}
		r.pre, r.post = style.Render(pre), style.Render(post)
		r.node, r.gen, r.focused = n, m.gen, m.focused
	}
	b.WriteString(r.pre)
	if w := m.widths[colAge]; w > 0 {
		var ab strings.Builder
		m.writeAge(&ab, n, now)
		b.WriteString(style.Render(ab.String()))
	}
	b.WriteString(r.post)
}

func (m *Model) empty() string {
	q := m.list.Query()
	switch {
	case m.c.Store.Len() == 0:
		return "No nodes yet."
	case !q.Filter.IsZero():
		return fmt.Sprintf("No nodes match %q.", q.Filter.String())
	}
	return fmt.Sprintf("No nodes in pool %s.", q.Pool)
}

// sortArrow points the way the rows go: ▴ ascending (a to z, 1 to 10), ▾ descending.
// Both are of neutral East Asian width, unlike ↑ and ↓.
func sortArrow(desc bool) string {
	if desc {
		return "▾"
	}
	return "▴"
}

// columnArrow is the arrow of sort key k as the column reads: sorting by the time a
// node entered its phase, oldest first, shows IN PHASE longest first, descending.
func columnArrow(k model.SortKey, desc bool) string {
	if k == model.SortAge {
		desc = !desc
	}
	return sortArrow(desc)
}

// sortColumn is the grid column a sort key orders by, for the header's arrow; -1 for
// the phase, which is all the phase columns.
func sortColumn(k model.SortKey) int {
	switch k {
	case model.SortName:
		return colName
	case model.SortPool:
		return colPool
	case model.SortAge:
		return colAge
	case model.SortStatus:
		return colStatus
	case model.SortCurrent:
		return colCurrent
	case model.SortDesired:
		return colDesired
	}
	return -1
}

// title is the pane's title line: what is shown, in what order, and the glyph legend.
func (m *Model) title() string {
	q := m.list.Query()
	k := titleKey{pool: q.Pool, filter: q.Filter.String(), sort: q.Sort, desc: q.Desc, shown: m.list.Len(), total: m.c.Store.Len(), width: m.width, focused: m.focused, gen: m.gen,
		pace: m.paceText(q.Pool)}
	if k == m.titleKey && m.titleStr != "" {
		return m.titleStr
	}
	scope := "all pools"
	if q.Pool != "" {
		scope = "pool " + q.Pool
	}
	dir := columnArrow(q.Sort, q.Desc)
	left := fmt.Sprintf(" Nodes: %s  %d/%d  sort: %s %s", scope, k.shown, k.total, q.Sort, dir)
	if !q.Filter.IsZero() {
		left += "  filter: " + q.Filter.String()
	}
	legend := fmt.Sprintf("%s done  %s in progress  %s waiting  %s failed  %s not started  %s behind target ",
		styles.GlyphDone, styles.GlyphInProgress, styles.GlyphWaiting, styles.GlyphFailed, styles.GlyphNotStarted, styles.GlyphBehind)
	style := m.c.Styles.Title
	if m.focused {
		style = m.c.Styles.TitleFocused
	}
	if k.pace != "" {
		// The rollouts' pace before the legend: what a watching operator asks next.
		left += "  pace: " + k.pace
	}
	var b strings.Builder
	if gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(legend); gap >= 2 {
		b.WriteString(left)
		layout.Pad(&b, gap)
		b.WriteString(legend)
	} else {
		layout.Fit(&b, left, m.width)
	}
	m.titleKey, m.titleStr = k, style.Render(b.String())
	return m.titleStr
}

// paceText is the pace of the rollouts the grid shows (pool's, or every pool's), as
// the title says it; "" when none rolls.
func (m *Model) paceText(pool string) string {
	now := m.c.Clock.Now().Truncate(time.Second)
	if m.paceSyncs != m.syncs || !m.paceAt.Equal(now) || m.pace == nil {
		m.paceSyncs, m.paceAt = m.syncs, now
		m.pace = append(m.c.Store.Paces(now), model.Pace{}) // never nil once computed
		m.pace = m.pace[:len(m.pace)-1]
	}
	var parts []string
	for _, p := range m.pace {
		if pool == "" || p.Pool == pool {
			parts = append(parts, p.String())
		}
	}
	return strings.Join(parts, "; ")
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.Open, k.Filter, k.Sort, k.Retry, k.Preview, k.Configs, k.BootImages, k.Command, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{k.Navigation(), {k.Open, k.YAML, k.Describe, k.Sort, k.Reverse, k.AllPools, k.Filter}, k.SortBy[:], {k.Logs, k.Pod, k.Budgets}}
}

var _ common.Component = (*Model)(nil)
