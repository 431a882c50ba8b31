package configs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/panes/configs"
	"github.com/mcotui/mcotui/tui/styles"
)

// TestContentText: each file's hunks under its path, a mode change, a binary file named
// and not printed, an unreadable one with the reason, a cut diff with how much is left,
// and a control character in a file's line escaped rather than sent to the terminal.
func TestContentText(t *testing.T) {
	fds := []configdiff.FileDiff{
		{Path: "/etc/motd", Kind: configdiff.Changed, OldMode: 0o644, NewMode: 0o644,
			Hunks: []string{"@@ -1 +1 @@", "-hello", "+hello \x1b]0;owned\x07"}},
		{Path: "/usr/local/bin/tool", Kind: configdiff.Changed, OldMode: 0o755, NewMode: 0o755, Binary: true},
		{Path: "/etc/run.sh", Kind: configdiff.Changed, OldMode: 0o644, NewMode: 0o755},
		{Path: "/etc/remote", Kind: configdiff.Added, OldMode: 0o644, NewMode: 0o644, Err: errors.New(`file /etc/remote: source "https://example.com/x" is not a data: URL`)},
		{Path: "/etc/long", Kind: configdiff.Changed, OldMode: 0o644, NewMode: 0o644, Hunks: []string{"@@ -1,400 +1,400 @@", "-a"}, Truncated: true, Lines: 801},
	}
	got := tuitest.Plain(configs.ContentText(styles.New(false), fds, 100))
	want := strings.Join([]string{
		"",
		"",
		"File contents",
		"  ~ /etc/motd",
		"    @@ -1 +1 @@",
		"    -hello",
		`    +hello \x1b]0;owned\a`,
		"  ~ /usr/local/bin/tool",
		"    binary contents differ (not shown)",
		"  ~ /etc/run.sh",
		"    mode 0644 → 0755",
		"  + /etc/remote",
		`    contents not shown: file /etc/remote: source "https://example.com/x" is not a data: URL`,
		"  ~ /etc/long",
		"    @@ -1,400 +1,400 @@",
		"    -a",
		"    … 799 more lines of diff not shown",
	}, "\n")
	if got != want {
		t.Errorf("ContentText:\n%s\nwant:\n%s", got, want)
	}
	if configs.ContentText(styles.New(false), nil, 100) != "" {
		t.Error("no files: want nothing")
	}
}
