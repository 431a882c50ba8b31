package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
	helppane "github.com/mcotui/mcotui/tui/panes/help"
	"github.com/mcotui/mcotui/tui/styles"
)

// View implements tea.Model.
func (u *UI) View() tea.View {
	v := tea.NewView(u.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "mcotui: " + u.where() + " @ " + layout.OrDash(u.info.Context)
	return v
}

// where names what the screen shows, for the terminal's title.
func (u *UI) where() string {
	switch {
	case u.dialog != nil:
		return u.dialog.Title()
	case u.showHelp:
		return "help"
	case u.view == viewConfigs:
		return "configs of pool " + u.configs.Pool()
	case u.view == viewBootImages:
		return "boot images"
	case u.view == viewBuilds:
		return "image builds"
	case u.focus == panePools:
		return "pools"
	case u.showDetail:
		return "node " + u.detail.Name()
	case u.grid.Query().Pool != "":
		return "nodes of pool " + u.grid.Query().Pool
	}
	return "nodes"
}

// render is the screen as a string: the panes stacked, the narration line, footer and
// status line below, and the help box over them when open.
func (u *UI) render() string {
	if u.width <= 0 || u.height <= 0 {
		return "" // no size yet: nothing sensible to draw
	}
	var b strings.Builder
	switch u.view {
	case viewConfigs:
		b.WriteString(u.configs.View())
	case viewBootImages:
		b.WriteString(u.bootimages.View())
	case viewBuilds:
		b.WriteString(u.builds.View())
	default:
		if u.poolsShown > 0 {
			b.WriteString(u.pools.View())
			b.WriteByte('\n')
		}
		b.WriteString(u.body().View())
	}
	if u.narrationRows() > 0 {
		b.WriteByte('\n')
		b.WriteString(u.narrationView())
	}
	b.WriteByte('\n')
	b.WriteString(u.footerView())
	b.WriteByte('\n')
	b.WriteString(u.statusView())
	screen := b.String()
	var box string
	switch {
	case u.dialog != nil:
		box = u.dialog.View()
	case u.showHelp:
		box = u.help.View()
	}
	if box != "" {
		screen = overlay(screen, box, u.width, u.height, &u.boxCache)
	}
	return screen
}

// overlay draws box centred over screen (width x height cells), line by line: each line
// the box covers is the screen's line up to the box, the box's line, and the screen's
// line after it, whose styles carry on as the sequences before the cut are kept.
//
// It does what lipgloss's compositor does with two layers at a fraction of the cost:
// the compositor parses every cell of the screen into a canvas and encodes it again,
// some 10 ms a frame at 200x60 on a loaded machine, which a keypress opening the help
// waited for. The box's lines and widths are kept (in boxCache) while the same box is
// drawn frame after frame, and each covered line is cut in one pass (cut).
func overlay(screen, box string, width, height int, bc *boxCache) string {
	boxLines, widths, bw := bc.get(box)
	x := max(0, (width-bw)/2)
	y := max(0, (height-len(boxLines))/2)
	lines := strings.Split(screen, "\n")
	for i, bl := range boxLines {
		r := y + i
		if r >= len(lines) {
			break
		}
		line := lines[r]
		left, leftW, right := cut(line, x, x+bw)
		var b strings.Builder
		b.Grow(len(line) + len(bl) + 16)
		b.WriteString(left)
		layout.Pad(&b, x-leftW)
		b.WriteString(ansi.ResetStyle)
		b.WriteString(bl)
		layout.Pad(&b, bw-widths[i])
		b.WriteString(ansi.ResetStyle)
		b.WriteString(right)
		lines[r] = b.String()
	}
	return strings.Join(lines, "\n")
}

// boxCache is the last box overlay drew, split into lines with their widths.
type boxCache struct {
	box    string
	lines  []string
	widths []int
	width  int // the widest line's
}

func (c *boxCache) get(box string) (lines []string, widths []int, width int) {
	if c.lines == nil || box != c.box {
		c.box, c.lines, c.width = box, strings.Split(box, "\n"), 0
		c.widths = c.widths[:0]
		for _, l := range c.lines {
			w := ansi.StringWidth(l)
			c.widths = append(c.widths, w)
			c.width = max(c.width, w)
		}
	}
	return c.lines, c.widths, c.width
}

// cut splits a screen line around its cells [x, end), in one pass where ansi.Truncate
// and ansi.TruncateLeft take three (Truncate measures the whole line first, and both
// cluster every grapheme to the end). left is ansi.Truncate(line, x, ""): the cells
// before x (fewer when a wide character straddles x), then every escape sequence after
// them; leftW is its width. right is ansi.TruncateLeft(line, end, ""): every escape
// sequence before end, then the line from the first character that ends past end.
func cut(line string, x, end int) (left string, leftW int, right string) {
	var before strings.Builder  // escape sequences of the line before right
	leftEnd, afterLeft := -1, 0 // afterLeft: before's length when left ended
	w := 0
	state := byte(ansi.NormalState)
	rightAt := -1
	for i := 0; i < len(line); {
		c := line[i]
		var seq string
		var sw, n int
		if state == ansi.NormalState && c >= 0x20 && c < 0x7f {
			seq, sw, n = line[i:i+1], 1, 1 // printable ASCII, most of a screen
		} else {
			seq, sw, n, state = ansi.DecodeSequence(line[i:], state, nil)
			n = max(n, 1)
		}
		switch {
		case seq == "":
		case seq[0] == ansi.ESC:
			before.WriteString(seq)
			i += n
			continue
		case seq[0] < 0x20 || seq[0] == 0x7f:
			i += n // a control: the ansi functions drop it
			continue
		}
		// Text, of sw cells (none for a combining mark on its own).
		if leftEnd < 0 && w+sw > x {
			leftEnd, leftW, afterLeft = i, w, before.Len()
		}
		if w+sw > end {
			rightAt = i
			break
		}
		w += sw
		i += n
	}
	seqs := before.String()
	if leftEnd < 0 {
		// The line ends before x: it is left whole, and right has its sequences alone.
		return line, w, seqs
	}
	left = line[:leftEnd] + seqs[afterLeft:]
	if rightAt < 0 {
		return left, leftW, seqs
	}
	right = seqs + line[rightAt:]
	// Truncate keeps the sequences of the whole line, those after end too.
	return left + escapes(line[rightAt:]), leftW, right
}

// escapes is the escape sequences of s, in order, without the text between them.
func escapes(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, ansi.ESC)
		if i < 0 {
			return b.String()
		}
		seq, _, n, _ := ansi.DecodeSequence(s[i:], ansi.NormalState, nil)
		b.WriteString(seq)
		s = s[i+max(n, 1):]
	}
}

// footerView is the open prompt, or the last prompt's error, or the focused pane's keys.
func (u *UI) footerView() string {
	st := u.c.Styles
	var s string
	switch {
	case u.promptKind != promptNone:
		s = u.prompt.View()
		if u.promptErr != "" {
			s += "  " + st.PromptErr.Render(u.promptErr)
		}
	case u.promptErr != "":
		s = st.PromptErr.Render(u.promptErr)
	case u.notice != "" && u.noticeErr:
		s = st.PromptErr.Render(u.notice)
	case u.notice != "":
		s = st.OK.Render(u.notice)
	default:
		s = u.footer.ShortHelpView(u.focused().ShortHelp())
	}
	return ansi.Truncate(s, u.width, layout.Ellipsis)
}

// statusView is the status line: where the data comes from and how fresh it is on the
// left, what the cluster is doing on the right.
func (u *UI) statusView() string {
	st := u.c.Styles
	h := u.c.Store.Health()
	state := h.State
	if u.closed {
		state = model.Disconnected
	}
	l := statusLine{
		context:     u.info.Context,
		cluster:     u.info.Cluster,
		readOnly:    u.c.ReadOnly,
		state:       state.String(),
		connected:   state == model.Connected,
		healthStyle: st.StatusValue,
		nodes:       u.c.Store.Len(),
		clock:       u.c.Clock.Now().UTC().Format("15:04:05Z"),
	}
	if !h.Since.IsZero() && state != model.Connecting {
		l.age = layout.Age(u.c.Clock.Now().Sub(h.Since))
	}
	if h.Err != "" && state != model.Connected {
		l.err = h.Err
	}
	switch state {
	case model.Connected:
		l.healthStyle = l.healthStyle.Inherit(st.OK)
	case model.Degraded, model.Connecting:
		l.healthStyle = l.healthStyle.Inherit(st.Warn)
	case model.Disconnected:
		l.healthStyle = l.healthStyle.Inherit(st.Error)
	}
	// The counts are live, from the nodes as the grid shows them (a ✗ in the grid is
	// one degraded here), never a pool's status, which lags its nodes; a drain waiting on
	// a budget is updating, not degraded. A pool whose status disagrees is named, as its
	// own row is marked.
	for _, p := range u.c.Store.Pools() {
		c := u.c.Store.Counts(p.Name)
		l.updating += c.UpdatingNow
		l.degraded += c.DegradedNow
		if len(p.StatusBehind(c)) > 0 {
			l.behind = append(l.behind, p.Name)
		}
	}
	if d := u.drive; d != nil {
		// What this terminal does to the cluster on its own, for as long as it runs.
		switch {
		case d.stopping:
			l.drive, l.shortDrv = " stopping driving "+d.pool+" ", " stopping driving "+d.pool+" "
		case !d.leading:
			l.drive, l.shortDrv = " waiting for the Lease to drive "+d.pool+" ", " waiting to drive "+d.pool+" "
		default:
			l.drive, l.shortDrv = " driving "+d.pool+" ", " driving "+d.pool+" "
		}
	}
	return l.render(st, u.width)
}

// openHelp builds the overlay from the keymap and opens it.
func (u *UI) openHelp() {
	u.help.SetGroups(u.helpGroups())
	u.showHelp = true
}

// helpGroups is what the help overlay lists, built from the keymap.
func (u *UI) helpGroups() []helppane.Group {
	k := u.c.Keys
	glyphs := helppane.Pairs("Phase glyphs",
		styles.GlyphDone, "True: done",
		styles.GlyphInProgress, "in progress",
		styles.GlyphWaiting, "waiting (a drain held by a budget; retried)",
		styles.GlyphFailed, "failed: node degraded",
		styles.GlyphNotStarted, "False: not started, or not needed",
		styles.GlyphBehind, "behind the pool's target ("+styles.GlyphStaging+" staging its OS image)",
	)
	filter := helppane.Pairs("Filter (/)",
		"TEXT", "name contains TEXT",
		"pool:NAME", "in pool NAME",
		"phase:NAME", "in phase NAME (prefix: phase:drain)",
		"phase:none", "update not started",
		"degraded", "degraded nodes",
		"updating", "updating nodes",
		"waiting", "a phase waits (drain held)",
		"behind", "not on the pool's target",
		"notready", "kubelet not Ready",
		"done", "nodes on the pool's target",
		"!TERM", "not TERM; terms combine with AND",
	)
	cmds := helppane.Pairs("Commands (:)",
		"pools", "focus the pools",
		"nodes", "focus the node grid",
		"detail", "open the selected node",
		"pool NAME", "show the nodes of pool NAME",
		"node NAME", "open node NAME",
		"configs [POOL]", "a pool's MachineConfigs and rendered configs",
		"bootimages", "boot image modes and MachineSets",
		"builds", "image builds and OS streams",
		"all", "show the nodes of all pools",
		"pods [NODE]", "a node's pods; also pdb, events, ctx",
		"messages", "every notice so far, whole",
	)
	// Only what the session may do: read-only lists no action at all.
	groups := []helppane.Group{helppane.FromBindings("Global", k.Global()...)}
	acts := helppane.Group{Title: "Actions (each asks to confirm)"}
	for _, a := range []struct {
		b         key.Binding
		key, desc string
	}{
		{k.Pause, "p", "pause/resume pool"},
		{k.MaxUnavailable, "m", "set maxUnavailable"},
		{k.StartRollout, "P enter", "start rollout"},
		{k.Rollback, "R", "roll back pool, or remove its rollback pin"},
		{k.Retry, "r", "retry failed node"},
		{k.BootImageMode, "b m", "boot image mode"},
		{k.EditSelector, "b e", "Partial selector"},
		{k.Drive, "D", "drive the pool's rollout from here, or stop"},
		{k.EvictPod, "v", "evict the pod holding a node's drain"},
		{k.DeletePod, "ctrl+k", "delete that pod, past its budget"},
		{k.Rebuild, "i r", "rebuild a pool's OS image (MCO)"},
	} {
		if a.b.Enabled() {
			acts.Entries = append(acts.Entries, helppane.Entry{Key: a.key, Desc: a.desc})
		}
	}
	if len(acts.Entries) > 0 {
		groups = append(groups, acts)
	}
	groups = append(groups,
		helppane.FromBindings("Move", k.Navigation()...),
		helppane.FromBindings("Pools", flatten(u.pools.FullHelp()[1:])...),
		helppane.FromBindings("Nodes", flatten(u.grid.FullHelp()[1:3])...),
		helppane.FromBindings("Configs", k.Diff, k.Mark, k.PrevPool, k.NextPool),
		glyphs,
		filter,
		cmds,
		helppane.FromBindings("From a node", append(flatten(u.grid.FullHelp()[3:]), k.NextBlocker)...),
	)
	return groups
}

func flatten[T any](groups [][]T) []T {
	var out []T
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
