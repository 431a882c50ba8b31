package common

import (
	"fmt"
	"strings"
)

// Escape makes text from the cluster (names, messages, annotations, YAML) safe to draw:
// every control character, which a terminal would act on (an escape sequence in a
// condition message could move the cursor, retitle the window or worse), is shown as
// its Go escape (\x1b) instead. Newlines and tabs are kept when multiline is true (a
// document), and shown as \n and \t otherwise (one cell of a table). Text without a
// control character is returned as it is, without allocating.
//
// A shared helper for the CLI's output is on its way in another branch; this one is
// the TUI's until they merge.
func Escape(s string, multiline bool) string {
	if !needsEscape(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == '\uFFFD':
			b.WriteRune(r) // invalid UTF-8, already harmless
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			if multiline && (c == '\n' || c == '\t') {
				continue
			}
			return true
		}
		// C1 controls are U+0080..U+009F: 0xC2 0x80..0x9F in UTF-8.
		if c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] < 0xa0 {
			return true
		}
	}
	return false
}
