package common

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		in        string
		multiline bool
		want      string
	}{
		{"plain text", false, "plain text"},
		{"evil\x1b]0;pwned\x07title", false, `evil\x1b]0;pwned\x07title`},
		{"two\nlines\tand tab", false, `two\nlines\tand tab`},
		{"two\nlines\tand tab", true, "two\nlines\tand tab"},
		{"c1 \u009b2J", true, `c1 \x9b2J`},
		{"ünïcode ✓", false, "ünïcode ✓"},
	} {
		if got := Escape(tc.in, tc.multiline); got != tc.want {
			t.Errorf("Escape(%q, %t) = %q, want %q", tc.in, tc.multiline, got, tc.want)
		}
	}
}
