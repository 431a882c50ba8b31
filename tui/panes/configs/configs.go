// Package configs is the configs pane: one pool's MachineConfigs (those its
// machineConfigSelector selects, in MCO's merge order) and its rendered configs, with
// which one the pool targets, which one every node reached, and how many nodes run
// each. The cursor moves over both lists, so that any of them can be shown as YAML
// (Current). Two rendered configs can be diffed, with the actions a node would take,
// by the same core/configdiff and core/disruption rules the agent acts on.
package configs

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// Model is the configs pane.
type Model struct {
	c             *common.Common
	width, height int

	pool     string
	srcs     []*mcfgv1.MachineConfig // the MachineConfigs the pool selects, in merge order
	srcErr   error                   // why they could not be selected or ordered
	rendered []*mcfgv1.MachineConfig // the pool's, by name
	// cursor is in srcs then rendered: srcs[cursor], else rendered[cursor-len(srcs)].
	cursor int
	base   string // the diff's base; "" is the pool's current config
	offset int    // first line shown
}

// New returns the pane.
func New(c *common.Common) *Model { return &Model{c: c} }

// SetPool shows pool's configs, the cursor on its target.
func (m *Model) SetPool(pool string) {
	if pool == m.pool && len(m.rendered) > 0 {
		return
	}
	m.pool, m.base, m.offset = pool, "", 0
	m.reload()
	m.cursor = len(m.srcs)
	if p := m.c.Store.Pool(pool); p != nil {
		if i := slices.IndexFunc(m.rendered, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == p.Target }); i >= 0 {
			m.cursor += i
		}
	}
	m.clamp()
}

// Current is the MachineConfig under the cursor, one the pool selects or a rendered
// one, or nil.
func (m *Model) Current() *mcfgv1.MachineConfig {
	switch {
	case m.cursor >= 0 && m.cursor < len(m.srcs):
		return m.srcs[m.cursor]
	default:
		return m.selected()
	}
}

// Selected is the name of the rendered config under the cursor, or "".
func (m *Model) Selected() string {
	if mc := m.selected(); mc != nil {
		return mc.Name
	}
	return ""
}

// Pool is the pool shown.
func (m *Model) Pool() string { return m.pool }

// SetSize implements common.Component.
func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

// Sync applies one batch of store changes.
func (m *Model) Sync(ch model.Changes) {
	if ch.Configs || ch.Pools {
		cur := m.Current()
		m.reload()
		if cur != nil {
			// The same config stays under the cursor, in whichever list it is.
			if i := slices.IndexFunc(m.srcs, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == cur.Name }); i >= 0 {
				m.cursor = i
			} else if i := slices.IndexFunc(m.rendered, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == cur.Name }); i >= 0 {
				m.cursor = len(m.srcs) + i
			}
		}
		m.clamp()
	}
}

func (m *Model) reload() {
	m.rendered = m.c.Store.RenderedConfigs(m.pool)
	m.srcs, m.srcErr = nil, nil
	if p := m.c.Store.Pool(m.pool); p != nil && p.Obj != nil {
		srcs, err := render.Select(p.Obj, m.c.Store.MachineConfigs())
		if err == nil {
			srcs, err = render.Order(srcs)
		}
		m.srcs, m.srcErr = srcs, err
	}
}

func (m *Model) clamp() { m.cursor = max(0, min(m.cursor, len(m.srcs)+len(m.rendered)-1)) }

// selected is the rendered config under the cursor, or nil.
func (m *Model) selected() *mcfgv1.MachineConfig {
	i := m.cursor - len(m.srcs)
	if i < 0 || i >= len(m.rendered) {
		return nil
	}
	return m.rendered[i]
}

// baseName is the diff's base: the marked config, else the pool's current one.
func (m *Model) baseName() string {
	if m.base != "" {
		return m.base
	}
	if p := m.c.Store.Pool(m.pool); p != nil {
		return p.Config
	}
	return ""
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(kp, k.Up):
		m.cursor--
		m.clamp()
	case key.Matches(kp, k.Down):
		m.cursor++
		m.clamp()
	case key.Matches(kp, k.Top):
		m.cursor = 0
	case key.Matches(kp, k.Bottom):
		m.cursor = len(m.srcs) + len(m.rendered) - 1
		m.clamp()
	case key.Matches(kp, k.PrevPool, k.NextPool):
		pools := m.c.Store.Pools()
		i := slices.IndexFunc(pools, func(p *model.Pool) bool { return p.Name == m.pool })
		if len(pools) > 0 {
			step := 1
			if key.Matches(kp, k.PrevPool) {
				step = len(pools) - 1
			}
			m.SetPool(pools[(i+step)%len(pools)].Name)
		}
	case key.Matches(kp, k.Mark):
		if mc := m.selected(); mc != nil {
			m.base = mc.Name
		}
	case key.Matches(kp, k.Diff):
		return m.diff()
	}
	return nil
}

// diff opens the diff of the base and the selected config.
func (m *Model) diff() tea.Cmd {
	mc := m.selected()
	if mc == nil {
		return nil
	}
	from, to := m.baseName(), mc.Name
	if from == to {
		from = ""
		if p := m.c.Store.Pool(m.pool); p != nil && p.Target != to {
			from = to
			to = p.Target
		}
	}
	st := m.c.Styles
	store := m.c.Store
	// The files' contents are decoded once, as the view opens; an error there is the
	// summary's own.
	contents, _ := store.ContentDiffs(from, to)
	doc := dialog.NewDocument(m.c, "Diff of two rendered configs", func(width int) string {
		d, err := store.Diff(from, to)
		if err != nil {
			return st.Error.Render(err.Error())
		}
		return DiffText(st, d, width) + ContentText(st, contents, width)
	})
	m.c.Post(common.OpenDialogMsg{Dialog: doc})
	return nil
}

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	st := m.c.Styles
	var tb strings.Builder
	title := " Configs of pool " + m.pool
	if ps := m.c.Store.Pools(); len(ps) > 1 {
		var names []string
		for _, p := range ps {
			if p.Name == m.pool {
				names = append(names, "["+p.Name+"]")
			} else {
				names = append(names, p.Name)
			}
		}
		title += "   ◂ " + strings.Join(names, " ") + " ▸"
	}
	layout.Fit(&tb, title, m.width)
	head := st.TitleFocused.Render(tb.String())

	lines, cursorLine := m.lines()
	body := m.height - 1
	if cursorLine >= 0 {
		if cursorLine < m.offset {
			m.offset = cursorLine
		}
		if cursorLine >= m.offset+body {
			m.offset = cursorLine - body + 1
		}
	}
	m.offset = max(0, min(m.offset, len(lines)-body))
	shown := lines[m.offset:min(len(lines), m.offset+body)]
	for i, l := range shown {
		shown[i] = ansi.Truncate(l, m.width, layout.Ellipsis)
	}
	return layout.Lines(head+"\n"+strings.Join(shown, "\n"), m.height)
}

// lines are the pane's content, one string per line, and the cursor's line.
func (m *Model) lines() ([]string, int) {
	st := m.c.Styles
	now := m.c.Clock.Now()
	var out []string
	add := func(s string) { out = append(out, s) }
	fit := func(s string, w int) string {
		var b strings.Builder
		layout.Fit(&b, s, w)
		return b.String()
	}
	p := m.c.Store.Pool(m.pool)
	if p == nil {
		add(st.Dim.Render(fmt.Sprintf("No pool %q.", m.pool)))
		return out, -1
	}
	add(st.Label.Render("target  ") + layout.OrDash(p.Target) + st.Dim.Render("  spec.configuration"))
	add(st.Label.Render("current ") + layout.OrDash(p.Config) + st.Dim.Render("  status.configuration: every node reached it"))
	add("")

	// The pool's sources, in the order MCO merges them.
	selector := "-"
	if s := p.Obj.Spec.MachineConfigSelector; s != nil {
		selector = metav1.FormatLabelSelector(s)
	}
	srcs, err := m.srcs, m.srcErr
	add(st.Section.Render("MachineConfigs") + st.Dim.Render(fmt.Sprintf("  %d selected by %s, in merge order", len(srcs), selector)))
	switch {
	case err != nil:
		add("  " + st.Error.Render(err.Error()))
	case len(srcs) == 0:
		add("  " + st.Dim.Render("None."))
	}
	nameW := 4
	for _, mc := range srcs {
		nameW = max(nameW, len(mc.Name))
	}
	cursorLine := -1
	for i, mc := range srcs {
		if i == m.cursor {
			cursorLine = len(out)
			add(st.Selected.Render("▸ " + fit(fit(mc.Name, nameW)+"  "+layout.Age(now.Sub(mc.CreationTimestamp.Time)), max(0, m.width-2))))
			continue
		}
		add("  " + fit(mc.Name, nameW) + "  " + st.Dim.Render(layout.Age(now.Sub(mc.CreationTimestamp.Time))))
	}
	add("")

	// What generates some of those MachineConfigs (99-<pool>-generated-*), with the
	// condition of each: a refused KubeletConfig says why here.
	if feeds := m.c.Store.Feeds(m.pool); len(feeds) > 0 {
		add(st.Section.Render("Generated from") + st.Dim.Render(fmt.Sprintf("  %d KubeletConfigs and ContainerRuntimeConfigs selecting the pool", len(feeds))))
		kindW, nameW := 4, 4
		for _, f := range feeds {
			kindW, nameW = max(kindW, len(f.Kind)), max(nameW, len(f.Name))
		}
		for _, f := range feeds {
			state := st.Dim.Render("no condition yet")
			switch f.Accepted {
			case "True":
				state = "Accepted"
			case "False":
				state = st.Error.Render("Refused: " + textsafe.Escape(f.Message))
			}
			add("  " + fit(f.Kind, kindW) + "  " + fit(textsafe.Escape(f.Name), nameW) + "  " + state)
		}
		add("")
	}

	// The rendered configs, with what runs where.
	running := map[string]int{}
	m.c.Store.Each(func(n *model.Node) {
		if n.Pool == m.pool {
			running[n.Current]++
		}
	})
	add(st.Section.Render("Rendered configs") + st.Dim.Render(fmt.Sprintf("  %d; diff base %s", len(m.rendered), layout.OrDash(m.baseName()))))
	if len(m.rendered) == 0 {
		add("  " + st.Dim.Render("None yet."))
		return out, cursorLine
	}
	nameW = 4
	for _, mc := range m.rendered {
		nameW = max(nameW, len(mc.Name))
	}
	nameW = min(nameW, max(20, m.width-40))
	add(st.Header.Render("  " + fit("NAME", nameW) + "  " + fit("AGE", 5) + "  " + fit("NODES", 5) + "  ROLE"))
	for i, mc := range m.rendered {
		var roles []string
		if mc.Name == p.Target {
			roles = append(roles, "target")
		}
		if mc.Name == p.Config {
			roles = append(roles, "current")
		}
		if mc.Name == m.baseName() {
			roles = append(roles, "diff base")
		}
		line := fit(mc.Name, nameW) + "  " + fit(layout.Age(now.Sub(mc.CreationTimestamp.Time)), 5) + "  " +
			fit(fmt.Sprint(running[mc.Name]), 5) + "  " + strings.Join(roles, ", ")
		if len(m.srcs)+i == m.cursor {
			cursorLine = len(out)
			add(st.Selected.Render("▸ " + fit(line, max(0, m.width-2))))
			continue
		}
		add("  " + line)
	}
	return out, cursorLine
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.YAML, k.Diff, k.Mark, k.Rollback, k.NextPool, k.Main, k.BootImages, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}, {k.YAML, k.Diff, k.Mark, k.PrevPool, k.NextPool, k.Main}}
}

var _ common.Component = (*Model)(nil)
