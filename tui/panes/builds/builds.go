// Package builds is the image builds pane: for each MachineOSConfig (a pool in image
// mode) its MachineOSBuilds with MCO's conditions, their ages, the builder Job, the
// pushed image digest, why a build failed, and the log of the selected build's
// builder as the root streams it in; below them, the cluster's OS image streams
// (OSImageStream/cluster) and which pools use each. The states and words are
// core/imagemode's and core/osstream's, the ones `mcotui status` prints.
//
// The pane reads; the root does the I/O (the log's stream) and the rebuild, which the
// pane asks for with a Request.
package builds

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
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// MaxLogLines bounds the log lines the pane keeps: the end of a build's log is what
// says why it failed, and buildah's output runs to thousands of lines.
const MaxLogLines = 2000

// FollowLogMsg asks the root to follow the log of build's builder (its newest pod's
// BuilderContainer); the root answers with SetLog and AppendLog.
type FollowLogMsg struct{ Build string }

// Model is the builds pane.
type Model struct {
	c             *common.Common
	width, height int
	vp            viewport.Model

	sel   string   // the selected MachineOSBuild
	order []string // the builds in the order drawn

	// The log shown under the selected build: whose it is, where it comes from, and
	// its lines so far.
	logBuild  string
	logSource string
	logNote   string // "following", "ended", or why there is none
	logErr    bool
	log       []string
}

// New returns the pane.
func New(c *common.Common) *Model {
	vp := common.NewViewport(c)
	vp.FillHeight = true
	// Up and down move the selection; the document scrolls by pages.
	vp.KeyMap.Up, vp.KeyMap.Down = key.NewBinding(key.WithDisabled()), key.NewBinding(key.WithDisabled())
	return &Model{c: c, vp: vp}
}

// SetSize implements common.Component.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.vp.SetWidth(width)
	m.rebuild()
}

// Sync applies one batch of store changes.
func (m *Model) Sync(ch model.Changes) {
	if ch.Builds || ch.Pools {
		m.rebuild()
	}
}

// Tick redraws for the clock: ages and a running build's duration move.
func (m *Model) Tick() { m.rebuild() }

// Selected is the selected MachineOSBuild's name, "" when there is none.
func (m *Model) Selected() string { return m.sel }

// Select selects the build named name, or the newest build of the MachineOSConfig (or
// pool: MCO names a MachineOSConfig after its pool) named name, and reports whether
// there is one.
func (m *Model) Select(name string) bool {
	if m.c.Store.MachineOSBuild(name) == nil {
		found := false
		for _, b := range m.c.Store.MachineOSBuilds() { // newest first per MachineOSConfig
			if b.Spec.MachineOSConfig.Name == name {
				name, found = b.Name, true
				break
			}
		}
		if !found {
			return false
		}
	}
	m.sel = name
	m.rebuild()
	return true
}

// SetLog starts the log shown under build: from names where it comes from ("pod
// NAMESPACE/NAME, container image-build"), note says how it goes; isErr marks a note
// that says why there is no log.
func (m *Model) SetLog(build, from, note string, isErr bool) {
	if build != m.logBuild {
		m.log = m.log[:0]
	}
	m.logBuild, m.logSource, m.logNote, m.logErr = build, from, note, isErr
	m.rebuild()
}

// AppendLog adds lines to the log of build, keeping the last MaxLogLines.
func (m *Model) AppendLog(build string, lines []string) {
	if build != m.logBuild {
		return
	}
	for _, l := range lines {
		m.log = append(m.log, textsafe(l))
	}
	if n := len(m.log) - MaxLogLines; n > 0 {
		m.log = append(m.log[:0], m.log[n:]...)
	}
	m.rebuild()
}

// LogBuild is the build whose log is shown, "" when none.
func (m *Model) LogBuild() string { return m.logBuild }

// textsafe keeps a log line from moving the cursor or restyling the screen: a
// builder's output is whatever the Containerfile's commands print.
func textsafe(s string) string {
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// logHeight is the rows the log takes at the bottom of the pane: half of it while the
// selected build's log is shown, none otherwise.
func (m *Model) logHeight() int {
	if m.logBuild == "" || m.logBuild != m.sel || m.height < 8 {
		return 0
	}
	return min((m.height-1)/2, max(4, len(m.logLines(m.width))+2))
}

// logLines are the log's lines wrapped to w cells: the line that says why a build
// failed is often the longest.
func (m *Model) logLines(w int) []string {
	var out []string
	for _, l := range m.log {
		out = append(out, wrapWords(l, w)...)
	}
	return out
}

func (m *Model) rebuild() {
	if m.width <= 0 {
		return
	}
	m.vp.SetHeight(max(0, m.height-1-m.logHeight()))
	y := m.vp.YOffset()
	m.vp.SetContent(m.document())
	m.vp.SetYOffset(y)
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	if msg, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(msg, k.Up):
			m.move(-1)
			return nil
		case key.Matches(msg, k.Down):
			m.move(1)
			return nil
		case key.Matches(msg, k.Logs):
			if m.sel == "" {
				return nil
			}
			m.c.Post(FollowLogMsg{Build: m.sel})
			return nil
		case key.Matches(msg, k.Rebuild):
			m.rebuildRequest()
			return nil
		}
	}
	return common.Scroll(&m.vp, k, msg)
}

func (m *Model) move(d int) {
	if len(m.order) == 0 {
		return
	}
	i := 0
	for j, n := range m.order {
		if n == m.sel {
			i = j
		}
	}
	i = min(max(i+d, 0), len(m.order)-1)
	m.sel = m.order[i]
	m.rebuild()
	// The selected row stays on screen: the table starts two lines down.
	if row := 2 + i; row < m.vp.YOffset() {
		m.vp.SetYOffset(row)
	} else if row >= m.vp.YOffset()+m.vp.Height() {
		m.vp.SetYOffset(row - m.vp.Height() + 1)
	}
}

// rebuildRequest asks the root to confirm a rebuild of the selected build's
// MachineOSConfig.
func (m *Model) rebuildRequest() {
	b := m.c.Store.MachineOSBuild(m.sel)
	if b == nil {
		return
	}
	mosc := m.c.Store.MachineOSConfig(b.Spec.MachineOSConfig.Name)
	if mosc == nil {
		return
	}
	var current *mcfgv1.MachineOSBuild
	if cur := mosc.Annotations[imagemode.CurrentBuildAnnotation]; cur != "" {
		current = m.c.Store.MachineOSBuild(cur)
	}
	m.c.Post(common.RequestMsg{Request: action.RebuildRequest(mosc, current)})
}

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	title := fmt.Sprintf(" Image builds  %s, %s", plural(len(m.c.Store.MachineOSConfigs()), "MachineOSConfig"), plural(len(m.c.Store.MachineOSBuilds()), "MachineOSBuild"))
	var b strings.Builder
	layout.Fit(&b, title, m.width)
	out := m.c.Styles.TitleFocused.Render(b.String())
	if m.height > 1 {
		out += "\n" + m.vp.View()
	}
	if h := m.logHeight(); h > 0 {
		out += "\n" + m.logView(h)
	}
	return out
}

// logView is the followed log's last lines under a line that says whose it is, h rows.
func (m *Model) logView(h int) string {
	st := m.c.Styles
	style := st.Dim
	if m.logErr {
		style = st.Error
	}
	head := "Log"
	if m.logSource != "" {
		head += " of " + m.logSource
	}
	var lines []string
	for _, l := range wrapWords(head+" "+m.logNote, m.width) {
		lines = append(lines, style.Render(l))
	}
	if !m.logErr {
		lines[0] = st.Section.Render(ansi.Strip(lines[0]))
	}
	log := m.logLines(m.width)
	rows := h - len(lines)
	start := max(0, len(log)-rows)
	lines = append(lines, log[start:]...)
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (m *Model) document() string {
	st := m.c.Styles
	store := m.c.Store
	var b strings.Builder
	line := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	section := func(title, note string) {
		s := st.Section.Render(title)
		if note != "" {
			s += "  " + st.Dim.Render(note)
		}
		line(s)
	}
	now := m.c.Clock.Now()

	builds := store.MachineOSBuilds()
	m.order = m.order[:0]
	for _, bl := range builds {
		m.order = append(m.order, bl.Name)
	}
	if store.MachineOSBuild(m.sel) == nil {
		m.sel = firstOfInterest(builds)
	}

	section("MachineOSBuilds", "per MachineOSConfig, newest first")
	for _, r := range []string{"machineosconfigs", "machineosbuilds"} {
		if slices.Contains(m.c.Info.Unreadable, r) {
			line(st.Warn.Render("  This session's identity may not list and watch " + r + ": they are not shown."))
		}
	}
	if len(store.MachineOSConfigs()) == 0 && len(builds) == 0 {
		line(st.Dim.Render("  No MachineOSConfig: no pool is in image mode (On-Cluster Layering)."))
	} else {
		m.table(&b, builds, now)
	}
	if sel := store.MachineOSBuild(m.sel); sel != nil {
		b.WriteByte('\n')
		m.detail(&b, sel, section, now)
	}
	b.WriteByte('\n')
	m.streams(&b, section)
	return strings.TrimRight(b.String(), "\n")
}

// firstOfInterest is the build to select first: the newest that failed or was
// interrupted (what an operator opens the view for), else the newest running, else
// the first.
func firstOfInterest(builds []*mcfgv1.MachineOSBuild) string {
	if len(builds) == 0 {
		return ""
	}
	pick := func(ok func(imagemode.State) bool) *mcfgv1.MachineOSBuild {
		var best *mcfgv1.MachineOSBuild
		for _, b := range builds {
			if ok(imagemode.BuildState(b)) && (best == nil || b.CreationTimestamp.After(best.CreationTimestamp.Time)) {
				best = b
			}
		}
		return best
	}
	if b := pick(func(s imagemode.State) bool { return s == imagemode.Failed || s == imagemode.Interrupted }); b != nil {
		return b.Name
	}
	if b := pick(func(s imagemode.State) bool { return !s.Done() }); b != nil {
		return b.Name
	}
	return builds[0].Name
}

// Widths of the build table's fixed columns.
const (
	stateW = 11
	ageW   = 5
	durW   = 8
)

func (m *Model) table(b *strings.Builder, builds []*mcfgv1.MachineOSBuild, now time.Time) {
	st := m.c.Styles
	poolW := 4
	for _, bl := range builds {
		poolW = max(poolW, len(imagemode.PoolOf(bl, m.c.Store.MachineOSConfig(bl.Spec.MachineOSConfig.Name))))
	}
	poolW = min(poolW, 24)
	// indent and mark, then NAME, STATE, AGE, DURATION, POOL, two cells apart.
	longest := 4
	for _, bl := range builds {
		longest = max(longest, len(bl.Name))
	}
	nameW := min(longest, max(12, m.width-4-2-stateW-2-ageW-2-durW-2-poolW))
	row := func(mark string, style func(...string) string, cells ...string) string {
		var l strings.Builder
		l.WriteString("  ")
		l.WriteString(mark)
		for i, c := range cells {
			w := []int{nameW, stateW, ageW, durW, poolW}[i]
			var cb strings.Builder
			layout.Fit(&cb, c, w)
			if i == 1 && style != nil {
				l.WriteString(style(cb.String()))
			} else {
				l.WriteString(cb.String())
			}
			if i < len(cells)-1 {
				l.WriteString("  ")
			}
		}
		return strings.TrimRight(l.String(), " ") + "\n"
	}
	b.WriteString(st.Header.Render(strings.TrimSuffix(row("  ", nil, "NAME", "STATE", "AGE", "DURATION", "POOL"), "\n")) + "\n")
	if len(builds) == 0 {
		b.WriteString(st.Dim.Render("  No MachineOSBuild yet: MCO creates one when the pool's rendered config needs an image."))
		b.WriteByte('\n')
		return
	}
	for _, bl := range builds {
		state := imagemode.BuildState(bl)
		mark := "  "
		if bl.Name == m.sel {
			mark = "▸ "
		}
		mosc := m.c.Store.MachineOSConfig(bl.Spec.MachineOSConfig.Name)
		b.WriteString(row(mark, m.stateStyle(state), bl.Name, string(state), layout.Age(now.Sub(bl.CreationTimestamp.Time)),
			layout.OrDash(imagemode.Duration(bl, now)), imagemode.PoolOf(bl, mosc)))
	}
}

// stateStyle colours a build's state as the pools pane colours a pool's.
func (m *Model) stateStyle(s imagemode.State) func(...string) string {
	st := m.c.Styles
	switch s {
	case imagemode.Failed, imagemode.Interrupted:
		return st.Error.Render
	case imagemode.Succeeded:
		return st.OK.Render
	case imagemode.Building, imagemode.Prepared:
		return st.Warn.Render
	}
	return st.Dim.Render
}

// detail is the selected build: why it failed first (what an operator looks for), its
// conditions, the config it builds, its builder, its image, and its builder's log.
func (m *Model) detail(b *strings.Builder, bl *mcfgv1.MachineOSBuild, section func(string, string), now time.Time) {
	st := m.c.Styles
	state := imagemode.BuildState(bl)
	mosc := m.c.Store.MachineOSConfig(bl.Spec.MachineOSConfig.Name)
	section("Build "+bl.Name, string(state))
	wrap := func(label, text string, style lipgloss.Style) {
		const labelW = 10
		var lb strings.Builder
		lb.WriteString("  ")
		layout.Fit(&lb, label, labelW)
		lb.WriteString("  ")
		indent := strings.Repeat(" ", 2+labelW+2)
		w := max(20, m.width-len(indent))
		for i, l := range wrapWords(text, w) {
			if i == 0 {
				b.WriteString(st.Label.Render(lb.String()) + style.Render(l))
			} else {
				b.WriteString(indent + style.Render(l))
			}
			b.WriteByte('\n')
		}
	}
	if why := imagemode.Why(bl); why != "" {
		wrap(string(state), why, st.Error)
	}
	// The conditions that hold, with their ages; MCO keeps the others False.
	var conds []string
	others := "the others False"
	for _, t := range []mcfgv1.BuildProgress{mcfgv1.MachineOSBuildPrepared, mcfgv1.MachineOSBuilding, mcfgv1.MachineOSBuildSucceeded, mcfgv1.MachineOSBuildInterrupted, mcfgv1.MachineOSBuildFailed} {
		c := imagemode.Condition(bl, t)
		switch {
		case c == nil:
			others = "the others not set"
		case c.Status == metav1.ConditionTrue:
			s := string(t) + " True"
			if !c.LastTransitionTime.IsZero() {
				s += " " + layout.Age(now.Sub(c.LastTransitionTime.Time))
			}
			conds = append(conds, s)
		}
	}
	if len(conds) == 0 {
		others = "none True yet"
	}
	wrap("Conditions", strings.Join(append(conds, others), "; "), st.Dim)
	pool := imagemode.PoolOf(bl, mosc)
	wrap("Pool", pool+", "+bl.Spec.MachineConfig.Name, lipgloss.NewStyle())
	ns, job := imagemode.BuilderJob(bl)
	wrap("Builder", "Job "+job+" in "+ns, lipgloss.NewStyle())
	img := string(bl.Status.DigestedImagePushSpec)
	switch {
	case img != "" && mosc != nil && string(mosc.Status.CurrentImagePullSpec) == img:
		wrap("Image", img+" (the MachineOSConfig's current image: the pool's nodes get it)", st.OK)
	case img != "":
		wrap("Image", img, st.OK)
	case state.Done():
		wrap("Image", "none pushed", st.Dim)
	default:
		wrap("Image", "not pushed yet", st.Dim)
	}
	if mosc != nil && imagemode.RebuildPending(mosc) {
		wrap("Rebuild", "asked for ("+imagemode.RebuildAnnotation+"); MCO clears it when the new build is done", st.Warn)
	}
	if m.logBuild != bl.Name {
		hint := "l follows the builder's " + imagemode.BuilderContainer + " log"
		if !m.c.ReadOnly && m.c.Keys.Rebuild.Enabled() {
			hint += ", r asks MCO to rebuild"
		}
		b.WriteString(st.Dim.Render("  " + hint))
		b.WriteByte('\n')
	}
}

// streams lists OSImageStream/cluster's available streams, the default marked, with
// the pools that use each (osstream.From: a pool's own, the worker pool's, the
// default).
func (m *Model) streams(b *strings.Builder, section func(string, string)) {
	st := m.c.Styles
	s := m.c.Store.OSImageStream()
	section("OS image streams", "OSImageStream/cluster")
	if slices.Contains(m.c.Info.Unreadable, "osimagestreams") {
		b.WriteString(st.Warn.Render("  This session's identity may not list and watch osimagestreams: they are not shown."))
		b.WriteByte('\n')
		return
	}
	if s == nil {
		b.WriteString(st.Dim.Render("  No OSImageStream/cluster: pools render from their MachineConfigs' osImageURL."))
		b.WriteByte('\n')
		return
	}
	var worker *mcfgv1.MachineConfigPool
	if w := m.c.Store.Pool("worker"); w != nil {
		worker = w.Obj
	}
	uses := map[string][]string{}
	for _, p := range m.c.Store.Pools() {
		if p.Obj == nil {
			continue
		}
		name, _ := osstream.From(p.Obj, worker)
		if name == "" {
			name = s.Status.DefaultStream
		}
		uses[name] = append(uses[name], p.Name)
	}
	nameW := 6
	for _, a := range s.Status.AvailableStreams {
		nameW = max(nameW, len(a.Name))
	}
	poolsW := 5
	for _, ps := range uses {
		poolsW = max(poolsW, len(strings.Join(ps, ", ")))
	}
	poolsW = min(poolsW, 30)
	row := func(name, def, pools, image string) string {
		var l strings.Builder
		l.WriteString("  ")
		layout.Fit(&l, name, nameW)
		l.WriteString("  ")
		layout.Fit(&l, def, 7)
		l.WriteString("  ")
		layout.Fit(&l, pools, poolsW)
		l.WriteString("  ")
		l.WriteString(image)
		var cut strings.Builder
		layout.Fit(&cut, l.String(), m.width)
		return strings.TrimRight(cut.String(), " ")
	}
	b.WriteString(st.Header.Render(row("STREAM", "DEFAULT", "POOLS", "OS IMAGE")))
	b.WriteByte('\n')
	for _, a := range s.Status.AvailableStreams {
		def := ""
		if a.Name == s.Status.DefaultStream {
			def = "default"
		}
		b.WriteString(row(a.Name, def, layout.OrDash(strings.Join(uses[a.Name], ", ")), string(a.OSImage)))
		b.WriteByte('\n')
	}
	for name, ps := range uses {
		if _, err := osstream.Set(s, name); err != nil {
			b.WriteString(st.Error.Render(row(name, "", strings.Join(ps, ", "), "not available")))
			b.WriteByte('\n')
		}
	}
}

// wrapWords wraps plain text at spaces into lines of at most w cells, cutting a word
// longer than a line (an image's digest) where the line ends: names are never split at
// their hyphens, which read as part of them.
func wrapWords(text string, w int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		for ansi.StringWidth(word) > w {
			if cur.Len() > 0 {
				lines = append(lines, cur.String())
				cur.Reset()
			}
			lines = append(lines, ansi.Truncate(word, w, ""))
			word = ansi.TruncateLeft(word, w, "")
		}
		switch {
		case cur.Len() == 0:
		case ansi.StringWidth(cur.String())+1+ansi.StringWidth(word) <= w:
			cur.WriteByte(' ')
		default:
			lines = append(lines, cur.String())
			cur.Reset()
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	logs := k.Logs
	logs.SetHelp(logs.Help().Key, "builder's log")
	return []key.Binding{logs, k.Rebuild, k.Down, k.Up, k.Main, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	logs := k.Logs
	logs.SetHelp(logs.Help().Key, "follow the builder's log")
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {logs, k.Rebuild, k.Main}}
}

var _ common.Component = (*Model)(nil)
