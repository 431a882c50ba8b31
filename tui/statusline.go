package tui

import (
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/styles"
)

// statusLine is what the status line says, piece by piece, and how far each piece has
// given way to a narrow terminal. The connection's state is never shortened: on a
// terminal too narrow for everything, the less important pieces are dropped or
// shortened whole, in statusSteps' order, before anything is cut.
type statusLine struct {
	context string
	// ctxFloor > 0: the context is cut in the middle to the room the rest leaves, but
	// to no fewer than ctxFloor cells; < 0: dropped; 0: whole.
	ctxFloor  int
	cluster   string
	noCluster bool

	readOnly  bool
	shortRO   bool
	drive     string // " driving worker " or "": what this terminal does on its own
	shortDrv  string // the same, shorter
	useShortD bool

	state, age, err string
	healthStyle     lipgloss.Style
	noAge           bool
	connected       bool
	// errFloor, as ctxFloor, for the watch's error (its ": " counted); it keeps its end,
	// the cause ("connect: connection refused").
	errFloor int

	behind     []string
	behindForm int // 0 "status behind: a,b", 1 "behind: a,b", 2 "behind", 3 none

	nodes, updating, degraded    int
	noClock, noNodes, noUpdating bool
	clock                        string
}

// statusSteps are the ways the status line narrows, least important first: each is
// taken, after the ones before it, only while the line is still too wide. One that
// changes nothing in this line (no clock to drop twice) says so, so that no width is
// measured for it.
var statusSteps = []func(l *statusLine) bool{
	// The clock is the terminal's own; the node total is the grid's title.
	func(l *statusLine) bool { return set(&l.noClock) },
	func(l *statusLine) bool { return set(&l.noNodes) },
	// How long it has been connected says nothing in an incident; how long it has been
	// degraded or disconnected does (how stale the screen is), and stays longer.
	func(l *statusLine) bool { return l.connected && l.age != "" && set(&l.noAge) },
	// A context as `oc login` names it is some 90 cells; its ends (API server, user)
	// tell it apart.
	func(l *statusLine) bool { return floor(&l.ctxFloor, l.context, 40) },
	func(l *statusLine) bool { return len(l.behind) > 0 && l.behindForm == 0 && inc(&l.behindForm) },
	// The cluster's kind (OpenShift, mcotui-managed) does not change while it runs.
	func(l *statusLine) bool { return set(&l.noCluster) },
	func(l *statusLine) bool { return floor(&l.errFloor, ": "+l.err, 40) },
	func(l *statusLine) bool { return l.drive != "" && set(&l.useShortD) },
	func(l *statusLine) bool { return floor(&l.ctxFloor, l.context, 20) },
	func(l *statusLine) bool { return set(&l.noUpdating) },
	func(l *statusLine) bool { return floor(&l.ctxFloor, l.context, 12) },
	func(l *statusLine) bool { return floor(&l.errFloor, ": "+l.err, 24) },
	func(l *statusLine) bool { return l.readOnly && set(&l.shortRO) },
	// The pools pane names the pool behind with its starred counts.
	func(l *statusLine) bool { return len(l.behind) > 0 && l.behindForm == 1 && inc(&l.behindForm) },
	func(l *statusLine) bool { return l.age != "" && set(&l.noAge) },
	func(l *statusLine) bool { return l.ctxFloor >= 0 && drop(&l.ctxFloor) },
	func(l *statusLine) bool { return len(l.behind) > 0 && l.behindForm < 3 && set3(&l.behindForm) },
	func(l *statusLine) bool { return l.err != "" && l.errFloor >= 0 && drop(&l.errFloor) },
}

func set(b *bool) bool {
	if *b {
		return false
	}
	*b = true
	return true
}

func inc(i *int) bool { *i++; return true }

func set3(i *int) bool { *i = 3; return true }

func drop(i *int) bool { *i = -1; return true }

// floor lowers *f, a flexible piece's floor, to w cells, unless the piece (s) is no
// wider, gone, or already as low.
func floor(f *int, s string, w int) bool {
	if *f < 0 || (*f > 0 && *f <= w) || lipgloss.Width(s) <= w {
		return false
	}
	*f = w
	return true
}

// render draws the line at width cells, narrowed as far as it must be.
func (l statusLine) render(st *styles.Styles, width int) string {
	left, right, plain := l.pieces(st, width)
	for _, step := range statusSteps {
		if lipgloss.Width(left)+1+lipgloss.Width(right) <= width {
			break
		}
		if step(&l) {
			left, right, plain = l.pieces(st, width)
		}
	}
	gap := max(1, width-lipgloss.Width(left)-lipgloss.Width(right))
	var line string
	if plain != "" {
		line = left + st.StatusBar.Render(strings.Repeat(" ", gap)+plain)
	} else {
		line = left + st.StatusBar.Render(strings.Repeat(" ", gap)) + right
	}
	// Only a terminal narrower than the state and the degraded count is cut here.
	line = ansi.Truncate(line, width, "")
	if w := lipgloss.Width(line); w < width {
		line += st.StatusBar.Render(strings.Repeat(" ", width-w))
	}
	return line
}

// pieces are the line's left and right sides as l now says; plain is the right side's
// text when it is all in the bar's style (drawn with the gap in one run), else "".
func (l *statusLine) pieces(st *styles.Styles, width int) (left, right, plain string) {
	var b strings.Builder
	b.WriteByte(' ')
	if !l.noNodes {
		b.WriteString(strconv.Itoa(l.nodes) + " nodes  ")
	}
	if !l.noUpdating {
		b.WriteString(strconv.Itoa(l.updating) + " updating  ")
	}
	b.WriteString(strconv.Itoa(l.degraded) + " degraded ")
	if !l.noClock {
		b.WriteString(" " + l.clock + " ")
	}
	counts := b.String()
	if s := l.behindText(); s != "" {
		right = st.Warn.Render(s) + st.StatusBar.Render(" ") + st.StatusBar.Render(counts)
	} else {
		right, plain = st.StatusBar.Render(counts), counts
	}

	var mid string // after the context, before the connection
	if l.noCluster {
		if l.ctxFloor >= 0 {
			mid = st.StatusValue.Render(" │ ")
		} else {
			mid = st.StatusValue.Render(" ")
		}
	} else {
		mid = st.StatusValue.Render(" " + layout.OrDash(l.cluster) + " │ ")
	}
	if l.readOnly {
		// k9s's read-only indicator: a session that cannot act says so everywhere.
		ro := " read-only "
		if l.shortRO {
			ro = " ro "
		}
		mid += st.StatusKey.Render(ro) + st.StatusValue.Render(" ")
	}
	if l.drive != "" {
		d := l.drive
		if l.useShortD {
			d = l.shortDrv
		}
		mid += st.StatusKey.Render(d) + st.StatusValue.Render(" ")
	}
	health := l.state
	if l.age != "" && !l.noAge {
		health += " " + l.age
	}

	// What the context's and the error's text share.
	room := width - 1 - lipgloss.Width(right) - lipgloss.Width(mid) - lipgloss.Width(health+" ")
	errText := ""
	if l.err != "" && l.errFloor >= 0 {
		errText = ": " + l.err
	}
	errNeed := lipgloss.Width(errText)
	if l.errFloor > 0 {
		errNeed = min(errNeed, l.errFloor)
	}
	if l.ctxFloor >= 0 {
		ctx := layout.OrDash(l.context)
		room -= 2
		if l.ctxFloor > 0 {
			ctx = middle(ctx, min(lipgloss.Width(ctx), max(l.ctxFloor, room-errNeed)))
		}
		left = st.StatusKey.Render(" " + ctx + " ")
		room -= lipgloss.Width(ctx)
	}
	if l.errFloor > 0 && lipgloss.Width(errText) > max(l.errFloor, room) {
		errText = ": " + layout.Ellipsis + ansi.TruncateLeft(l.err, lipgloss.Width(l.err)-(max(l.errFloor, room)-3), "")
	}
	health += errText
	left += mid + l.healthStyle.Render(health+" ")
	return left, right, plain
}

// behindText is the pools whose status is behind their nodes, in behindForm's form.
func (l *statusLine) behindText() string {
	if len(l.behind) == 0 {
		return ""
	}
	switch l.behindForm {
	case 0:
		return " status behind: " + strings.Join(l.behind, ",") + " "
	case 1:
		return " behind: " + strings.Join(l.behind, ",") + " "
	case 2:
		return " behind "
	}
	return ""
}

// middle is s cut to w cells keeping both its ends: a kubeconfig context's user and
// its cluster's port ("default/api-ci-ln-…com:6443/kube:admin").
func middle(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	if cut := layout.Name(s, w, 0, 0); lipgloss.Width(cut) <= w {
		return cut
	}
	return ansi.Truncate(s, w, layout.Ellipsis)
}
