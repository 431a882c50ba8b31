// Package layout sizes table columns to a width and fits text into them, for the panes'
// tables. Everything here is about cells: Kubernetes names are ASCII, so the common case
// is measured in bytes, and only other text pays for grapheme widths.
package layout

import (
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/textsafe"
)

// Column is a table column to size.
type Column struct {
	Title string // header
	Short string // header when the long one does not fit ("" = Title)
	Min   int    // narrowest content width (the header's width is added by Layout)
	Max   int    // widest it grows to when there is room (0 = Min)
	Drop  int    // columns with a higher Drop are removed first when the table is too wide; 0 is never
}

// Layout sizes columns to fit total cells with gap cells between columns. It first tries
// the long titles, then the short ones, then drops columns by Drop, and finally gives
// what is left to the columns that can grow, in order. A dropped column has width 0.
// It returns the widths and whether the short titles are in use.
func Layout(cols []Column, total, gap int) (widths []int, short bool) {
	widths = make([]int, len(cols))
	for _, s := range []bool{false, true} {
		short = s
		need := sizes(cols, widths, short, gap)
		if need <= total {
			grow(cols, widths, total-need)
			return widths, short
		}
	}
	// Still too wide with short titles: drop columns, least important first.
	for {
		worst := -1
		for i, c := range cols {
			if widths[i] > 0 && c.Drop > 0 && (worst < 0 || c.Drop > cols[worst].Drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		widths[worst] = 0
		need := used(widths, gap)
		if need <= total {
			grow(cols, widths, total-need)
			return widths, short
		}
	}
	return widths, short
}

func title(c Column, short bool) string {
	if short && c.Short != "" {
		return c.Short
	}
	return c.Title
}

func sizes(cols []Column, widths []int, short bool, gap int) int {
	for i, c := range cols {
		widths[i] = max(c.Min, lipgloss.Width(title(c, short)), 1)
	}
	return used(widths, gap)
}

func used(widths []int, gap int) int {
	n, cols := 0, 0
	for _, w := range widths {
		if w > 0 {
			n += w
			cols++
		}
	}
	return n + max(0, cols-1)*gap
}

// Used is the cells that widths take with gap cells between the shown columns.
func Used(widths []int, gap int) int { return used(widths, gap) }

// grow shares spare cells out one at a time among the columns that can grow, so that
// two config columns end up equally wide rather than one full and one cut.
func grow(cols []Column, widths []int, spare int) {
	for spare > 0 {
		grew := false
		for i, c := range cols {
			if spare > 0 && widths[i] > 0 && widths[i] < c.Max {
				widths[i]++
				spare--
				grew = true
			}
		}
		if !grew {
			return
		}
	}
}

// Title is a column's header text as laid out.
func Title(c Column, short bool) string { return title(c, short) }

// Ellipsis ends text cut to fit.
const Ellipsis = "…"

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return false
		}
	}
	return true
}

// Fit appends s to b cut or padded to exactly w cells. s is plain text: any control
// character in it (an escape sequence in a name from the cluster) is drawn escaped.
func Fit(b *strings.Builder, s string, w int) {
	if w <= 0 {
		return
	}
	if ascii(s) {
		if len(s) > w {
			b.WriteString(s[:w-1])
			b.WriteString(Ellipsis)
			return
		}
		b.WriteString(s)
		pad(b, w-len(s))
		return
	}
	// Text from the cluster may hold control characters: shown escaped, never sent.
	s = ansi.Truncate(textsafe.Escape(s), w, Ellipsis)
	b.WriteString(s)
	pad(b, w-ansi.StringWidth(s))
}

// Name is a name cut to w cells so that names which share their first pre and last suf
// bytes (a cluster's node names: "ci-ln-ds73n5t-72292-9xsm9-worker-a-" then a random
// end) stay apart: the shared start goes first ("…9xsm9-worker-a-xyz12"), then the
// shared end, and only a name whose own part is wider than w is cut in the middle,
// keeping both its ends. It is whole when it fits; the detail shows it whole always.
func Name(name string, w, pre, suf int) string {
	if len(name) <= w || w <= 0 || !ascii(name) {
		return name
	}
	if w < 4 {
		return name[:w]
	}
	pre, suf = min(pre, len(name)), min(suf, len(name))
	if pre+suf > len(name) {
		suf = len(name) - pre
	}
	// Drop the start: what is left keeps the whole distinct part.
	if k := len(name) - (w - 1); k <= pre {
		return Ellipsis + name[k:]
	}
	own := len(name) - pre - suf
	switch {
	case pre == 0 && own <= w-1:
		// Names that differ at once and share their end (FQDNs): cut the end.
		return name[:w-1] + Ellipsis
	case own <= w-2:
		return Ellipsis + name[pre:pre+w-2] + Ellipsis
	}
	// The distinct part alone is too wide: keep its start and its end.
	lead := ""
	if pre > 0 {
		lead, name, w = Ellipsis, name[pre:], w-1
	}
	head := (w - 1) / 2
	return lead + name[:head] + Ellipsis + name[len(name)-(w-1-head):]
}

// SharedEnds is how many leading and trailing bytes all of names share (0, 0 for fewer
// than two), for Name.
func SharedEnds(names []string) (pre, suf int) {
	if len(names) < 2 {
		return 0, 0
	}
	first := names[0]
	pre, suf = len(first), len(first)
	for _, n := range names[1:] {
		pre = min(pre, len(n))
		for i := range pre {
			if first[i] != n[i] {
				pre = i
				break
			}
		}
		suf = min(suf, len(n))
		for i := range suf {
			if first[len(first)-1-i] != n[len(n)-1-i] {
				suf = i
				break
			}
		}
	}
	return pre, min(suf, len(first)-pre)
}

// FitName is Name padded to exactly w cells, appended to b.
func FitName(b *strings.Builder, name string, w, pre, suf int) {
	if !ascii(name) || len(name) <= w {
		Fit(b, name, w)
		return
	}
	b.WriteString(Name(name, w, pre, suf))
}

// FitRight is Fit aligned right.
func FitRight(b *strings.Builder, s string, w int) {
	if n := ansi.StringWidth(s); n < w {
		pad(b, w-n)
		b.WriteString(s)
		return
	}
	Fit(b, s, w)
}

// Center appends s (one cell wide, possibly styled) centred in w cells.
func Center(b *strings.Builder, s string, w int) {
	left := (w - 1) / 2
	pad(b, left)
	b.WriteString(s)
	pad(b, w-1-left)
}

const spaces = "                                                                                "

func pad(b *strings.Builder, n int) {
	for n > 0 {
		k := min(n, len(spaces))
		b.WriteString(spaces[:k])
		n -= k
	}
}

// Pad appends n spaces.
func Pad(b *strings.Builder, n int) { pad(b, n) }

// AppendAge appends d as kubectl prints ages (k8s.io/apimachinery's
// duration.HumanDuration: "45s", "5m30s", "27m", "4h42m", "6d15h"), without allocating,
// since the grid prints one per visible row on every frame.
func AppendAge(b []byte, d time.Duration) []byte {
	seconds := int64(d / time.Second)
	switch {
	case seconds < -1:
		return append(b, "<invalid>"...)
	case seconds < 0:
		return append(b, "0s"...)
	case seconds < 60*2:
		return appendUnit(b, seconds, 's')
	}
	minutes := int64(d / time.Minute)
	if minutes < 10 {
		b = appendUnit(b, minutes, 'm')
		if s := seconds % 60; s != 0 {
			b = appendUnit(b, s, 's')
		}
		return b
	} else if minutes < 60*3 {
		return appendUnit(b, minutes, 'm')
	}
	hours := int64(d / time.Hour)
	switch {
	case hours < 8:
		b = appendUnit(b, hours, 'h')
		if m := minutes % 60; m != 0 {
			b = appendUnit(b, m, 'm')
		}
		return b
	case hours < 48:
		return appendUnit(b, hours, 'h')
	case hours < 24*8:
		b = appendUnit(b, hours/24, 'd')
		if h := hours % 24; h != 0 {
			b = appendUnit(b, h, 'h')
		}
		return b
	case hours < 24*365*2:
		return appendUnit(b, hours/24, 'd')
	case hours < 24*365*8:
		b = appendUnit(b, hours/24/365, 'y')
		if dy := (hours / 24) % 365; dy != 0 {
			b = appendUnit(b, dy, 'd')
		}
		return b
	}
	return appendUnit(b, hours/24/365, 'y')
}

// Age is AppendAge as a string.
func Age(d time.Duration) string { return string(AppendAge(nil, d)) }

// OrDash is s, or "-" for an empty cell: what kubectl prints for a value that is not
// set, so that a column never reads as shifted.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func appendUnit(b []byte, n int64, unit byte) []byte {
	var tmp [20]byte
	i := len(tmp)
	if n == 0 {
		i--
		tmp[i] = '0'
	}
	for n > 0 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
	}
	b = append(b, tmp[i:]...)
	return append(b, unit)
}

// Config is a rendered config's name to show in w cells: whole when it fits, else
// without its "rendered-<pool>-" prefix (a POOL column says it), since the hash is the
// part that tells two configs apart.
func Config(name, pool string, w int) string {
	if len(name) <= w {
		return name
	}
	if h, ok := strings.CutPrefix(name, render.PoolPrefix(pool)); ok {
		return h
	}
	return name
}

// Lines pads or cuts s to exactly h lines, so that a pane always fills the height the
// root gave it and the layout below it does not move.
func Lines(s string, h int) string {
	if h <= 0 {
		return ""
	}
	n := strings.Count(s, "\n") + 1
	switch {
	case n == h:
		return s
	case n < h:
		return s + strings.Repeat("\n", h-n)
	}
	i := 0
	for k := 0; k < h; k++ {
		j := strings.IndexByte(s[i:], '\n')
		if k == h-1 {
			return s[:i+j]
		}
		i += j + 1
	}
	return s
}

// Cells calls f for each shown column of a row (a width of 0 hides the column), with
// its index and width, writing the one-space gap between shown columns: the row
// builder the panes' tables share.
func Cells(b *strings.Builder, widths []int, f func(col, width int)) {
	first := true
	for i, w := range widths {
		if w == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		f(i, w)
	}
}
