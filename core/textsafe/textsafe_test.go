package textsafe

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/chrony.conf":         "/etc/chrony.conf",
		"café ✓ 日本":                "café ✓ 日本",
		`C:\path`:                  `C:\path`, // nothing else escaped: kept
		"a\x1b[2Jb":                `a\x1b[2Jb`,
		"title\x1b]0;pwned\x07":    `title\x1b]0;pwned\a`,
		"x\u009b31m":               `x\u009b31m`,
		"line1\nline2\ttab":        `line1\nline2\ttab`,
		"abc\u202edcba":            `abc\u202edcba`,
		"bad\xffbyte":              `bad\xffbyte`,
		"esc\x1b and \\ backslash": `esc\x1b and \\ backslash`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Quote("a\"b\x1b"); got != `"a\"b\x1b"` {
		t.Errorf("Quote = %s", got)
	}
}

// FuzzEscape: the result holds no control, bidi or invalid byte, and text that needs
// no escape comes back unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "a\x1b[2J", "\u202e", "\xff", `\`, "\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return unicode.IsControl(r) || isBidi(r) }) {
			t.Fatalf("Escape(%q) = %q still holds what acts on a terminal", s, got)
		}
		if !NeedsEscape(s) && got != s {
			t.Fatalf("Escape(%q) = %q changed safe text", s, got)
		}
	})
}

func TestEscapeLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kind: Node\nname:\tworker-0\n", "kind: Node\nname:\tworker-0\n"},
		{"reason: \x1b[2Jgone\nnext", "reason: \\x1b[2Jgone\nnext"},
		{"a\r\nb\u202e", "a\\r\nb\\u202e"},
	} {
		if got := EscapeLines(tc.in); got != tc.want {
			t.Errorf("EscapeLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
