package docgen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd"
	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/docgen"
)

// committed is the reference in the repository, relative to this package.
const committed = "../../../docs/reference"

// TestReferenceIsCurrent fails when a command, flag or help text changed and docs/reference
// was not regenerated: the committed pages must be exactly what the tree generates now.
func TestReferenceIsCurrent(t *testing.T) {
	fresh := t.TempDir()
	if err := docgen.Markdown(fresh); err != nil {
		t.Fatal(err)
	}
	want, err := docgen.Files(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := docgen.Files(committed)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	for _, name := range got {
		if !slices.Contains(want, name) {
			t.Errorf("docs/reference/%s documents a command that no longer exists: run make docs", name)
		}
	}
	for _, name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("docs/reference/%s is missing: run make docs", name)
			continue
		}
		fresh, err := os.ReadFile(filepath.Join(fresh, name))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, old) {
			t.Errorf("docs/reference/%s differs from its command's help: run make docs", name)
		}
	}
}

// TestHelpMatchesReference runs every command's --help through the real entry point and
// checks that its page says the same: the description, the examples and every flag's line.
func TestHelpMatchesReference(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		var out, errOut bytes.Buffer
		code := cmd.Run(append(path, "--help"), &cmdutil.Factory{
			IOStreams: cmdutil.IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut},
			Version:   "dev",
		})
		if code != 0 {
			t.Errorf("%s --help: exit %d: %s", c.CommandPath(), code, errOut.String())
		}
		page, err := os.ReadFile(filepath.Join(committed, strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"))
		if err != nil {
			t.Errorf("%s has no page: %v (run make docs)", c.CommandPath(), err)
			return
		}
		for _, line := range helpLines(out.String()) {
			if !bytes.Contains(page, []byte(line)) {
				t.Errorf("%s --help says %q; its page does not (run make docs)", c.CommandPath(), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(docgen.Root())
	if n < 15 {
		t.Errorf("walked %d commands; the tree has more", n)
	}
}

// helpLines are the lines of a help text that its page must hold too: the description,
// the examples and the flags, not the headings or the subcommands' table (the page
// links them instead).
func helpLines(help string) []string {
	var lines []string
	skip := false
	for _, l := range strings.Split(help, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "Available Commands:" || trimmed == "Additional help topics:":
			skip = true
			continue
		case strings.HasSuffix(trimmed, ":") && !strings.HasPrefix(l, " ") && trimmed != "":
			skip = false // a heading: Usage, Aliases, Examples, Flags, Global Flags
			continue
		case trimmed == "" || strings.HasPrefix(trimmed, "Use \"mcotui") || strings.HasSuffix(trimmed, " [command]"):
			// the page lists the subcommands under SEE ALSO instead
			continue
		}
		if !skip {
			lines = append(lines, trimmed)
		}
	}
	return lines
}

// TestManPages writes the man pages as make install does: one per command, each naming
// its command and its flags.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := docgen.Man(dir, "v9.9.9", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	md, err := docgen.Files(committed)
	if err != nil {
		t.Fatal(err)
	}
	man, err := docgen.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(man) != len(md) {
		t.Errorf("%d man pages for %d commands: %v", len(man), len(md), man)
	}
	page, err := os.ReadFile(filepath.Join(dir, "mcotui-rollout.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "MCOTUI" "1"`, "mcotui v9.9.9", `\fB--max-unavailable\fP`, `\fB--wait\fP`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("mcotui-rollout.1 lacks %q:\n%s", want, page)
		}
	}
}

// TestCompletions runs the completion commands make install writes its files with.
func TestCompletions(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out, errOut bytes.Buffer
		code := cmd.Run([]string{"completion", shell}, &cmdutil.Factory{
			IOStreams: cmdutil.IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut},
			Version:   "dev",
		})
		if code != 0 || !strings.Contains(out.String(), "mcotui") {
			t.Errorf("mcotui completion %s: exit %d, %d bytes: %s", shell, code, out.Len(), errOut.String())
		}
	}
}
