// Package textsafe makes text from a cluster or a file safe to print on a terminal. A
// path, a kernel argument, a reason annotation or a pod name can hold an escape sequence
// (ESC [ 2 J clears the screen, OSC 52 writes the clipboard, OSC 8 hides a link) or a
// bidirectional override that shows other text than is there; printed as is, it acts on
// the terminal of whoever reads the output. Every command and the TUI pass such text
// through Escape before printing it.
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every control character (C0, DEL, C1: newline and tab too),
// bidirectional formatting character and invalid UTF-8 byte written as a Go escape
// (\x1b, \n, \u202e, \xff), and a backslash doubled when anything was escaped, so the
// result reads back unambiguously. Text with none of them is returned as it is.
func Escape(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case unsafe(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// NeedsEscape reports whether Escape would change s.
func NeedsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, unsafe)
}

// Quote is s in double quotes, escaped as Escape does (and '"' too), for a message that
// names a value: always one line, and never acting on the terminal.
func Quote(s string) string {
	return `"` + strings.ReplaceAll(Escape(s), `"`, `\"`) + `"`
}

// unsafe reports whether a rune acts on a terminal or changes how text around it shows.
func unsafe(r rune) bool {
	return unicode.IsControl(r) || isBidi(r)
}

// isBidi reports the bidirectional formatting characters (Unicode's Bidi_Control and
// the marks), which reorder what a reader sees ("Trojan Source", CVE-2021-42574).
func isBidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// EscapeLines is Escape for a document of several lines (a YAML view, a description):
// newlines and tabs are kept as they are, everything else Escape escapes is escaped.
func EscapeLines(s string) string {
	if !NeedsEscape(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		for j, part := range strings.Split(line, "\t") {
			if j > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(Escape(part))
		}
	}
	return b.String()
}
