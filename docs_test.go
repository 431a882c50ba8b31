package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	"github.com/spf13/pflag"

	"github.com/mcotui/mcotui/cmd"
	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/tui/keys"
)

// The documentation's examples are run or checked here, so that README.md and docs/
// cannot drift from the program:
//   - a ```console block is a session: each "$ mcotui ARGS" line is run in this process
//     from the repository's root (only the commands that need no cluster), and the lines
//     up to the next "$" are what it prints, stdout then stderr; "# exit N" after the
//     command is its exit code (0 without);
//   - a block after "<!-- start of: FILE -->" is the start of FILE, a golden file that a
//     command's test checks (its "$" lines left out);
//   - a block after "<!-- asserted in: FILE -->" has each of its lines in FILE, the test
//     that asserts that output (its "$" lines left out);
//   - every relative link leads to a file, and an anchor to a heading of it.
//
// docs/reference is generated and checked by cmd/internal/docgen.

// offline are the commands a console block may run: they read files only.
var offline = map[string]bool{"validate": true, "render": true, "diff": true, "version": true}

func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, glob := range []string{"docs/*.md", "docs/runbooks/*.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

type block struct {
	file   string
	line   int    // of the opening fence
	lang   string // console, text, sh, ...
	marker string // the HTML comment on the line before the fence, if any
	lines  []string
}

func blocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	prev := ""
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &block{file: file, line: i + 1, lang: strings.TrimPrefix(l, "```")}
			if strings.HasPrefix(prev, "<!--") {
				cur.marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, "<!--"), "-->"))
			}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
		prev = l
	}
	if cur != nil {
		t.Errorf("%s:%d: a code block is not closed", file, cur.line)
	}
	return out
}

var exitRE = regexp.MustCompile(`\s+# exit (\d+)$`)

// TestDocsConsoleExamples runs every console block of README.md and docs/.
func TestDocsConsoleExamples(t *testing.T) {
	ran := 0
	for _, file := range docFiles(t) {
		for _, b := range blocks(t, file) {
			if b.lang != "console" {
				continue
			}
			for i := 0; i < len(b.lines); {
				cmdLine := b.lines[i]
				where := fmt.Sprintf("%s:%d", b.file, b.line+1+i)
				if !strings.HasPrefix(cmdLine, "$ mcotui ") {
					t.Errorf("%s: a console block's lines follow a \"$ mcotui ...\" line: %q", where, cmdLine)
					break
				}
				want := []string{}
				j := i + 1
				for ; j < len(b.lines) && !strings.HasPrefix(b.lines[j], "$ "); j++ {
					want = append(want, b.lines[j])
				}
				i = j
				code := 0
				if m := exitRE.FindStringSubmatch(cmdLine); m != nil {
					code, _ = strconv.Atoi(m[1])
					cmdLine = strings.TrimSuffix(cmdLine, m[0])
				}
				args := strings.Fields(strings.TrimPrefix(cmdLine, "$ mcotui "))
				if !offline[args[0]] {
					t.Errorf("%s: mcotui %s needs a cluster; show its output in a text block with a start-of or asserted-in marker", where, args[0])
					continue
				}
				var out bytes.Buffer
				got := cmd.Run(args, &cmdutil.Factory{
					IOStreams: cmdutil.IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &out},
					Version:   "dev",
				})
				ran++
				if got != code {
					t.Errorf("%s: mcotui %s exited %d; the docs say %d", where, strings.Join(args, " "), got, code)
				}
				if w := strings.Join(want, "\n") + "\n"; out.String() != w {
					t.Errorf("%s: mcotui %s printed\n%s\nthe docs say\n%s", where, strings.Join(args, " "), out.String(), w)
				}
			}
		}
	}
	if ran < 5 {
		t.Errorf("ran %d console examples; README.md and docs/offline.md hold more", ran)
	}
}

// TestDocsOutputsMatchTests checks the blocks that show a cluster command's output
// against the golden file or the test that checks that output.
func TestDocsOutputsMatchTests(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		for _, b := range blocks(t, file) {
			kind, src, ok := strings.Cut(b.marker, ":")
			if !ok || (kind != "start of" && kind != "asserted in") {
				continue
			}
			src = strings.Fields(src)[0]
			data, err := os.ReadFile(src)
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			}
			var shown []string
			for _, l := range b.lines {
				if !strings.HasPrefix(l, "$ ") {
					shown = append(shown, l)
				}
			}
			checked++
			switch kind {
			case "start of":
				if !strings.HasPrefix(string(data), strings.Join(shown, "\n")+"\n") {
					t.Errorf("%s:%d: the block is not the start of %s (regenerate that golden file, then copy it here)", b.file, b.line, src)
				}
			case "asserted in":
				for _, l := range shown {
					if strings.TrimSpace(l) != "" && !strings.Contains(string(data), l) {
						t.Errorf("%s:%d: %q is not in %s, which should assert it", b.file, b.line, l, src)
					}
				}
			}
		}
	}
	if checked < 2 {
		t.Errorf("checked %d blocks against tests; README.md holds more", checked)
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks follows every relative link of README.md and docs/ to its file and
// heading.
func TestDocsLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if anchor != "" && !info.IsDir() && !hasAnchor(t, dest, anchor) {
				t.Errorf("%s: link %s: %s has no heading with that anchor", file, target, dest)
			}
		}
	}
}

// hasAnchor reports whether a heading of the markdown file has GitHub's anchor anchor.
func hasAnchor(t *testing.T, file, anchor string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		if slug(strings.TrimLeft(l, "# ")) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens, punctuation
// other than hyphens and underscores dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsAlertRunbooks: every alert of mcotui install --monitoring has the heading its
// runbook_url points at in docs/monitoring.md.
func TestDocsAlertRunbooks(t *testing.T) {
	for _, alert := range []string{deploy.AlertNodeDegraded, deploy.AlertDrainBlocked, deploy.AlertPoolUpdatingLong,
		deploy.AlertAgentNotReporting, deploy.AlertNoLeader} {
		if !hasAnchor(t, "docs/monitoring.md", strings.ToLower(alert)) {
			t.Errorf("docs/monitoring.md has no heading %q, where the alert's runbook_url leads", alert)
		}
	}
}

// TestDocsCommandLines parses every mcotui command line of the docs' sh and console
// blocks against the command tree: the command exists, and so does each flag.
func TestDocsCommandLines(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		for _, b := range blocks(t, file) {
			if b.lang != "sh" && b.lang != "console" {
				continue
			}
			joined := strings.ReplaceAll(strings.Join(b.lines, "\n"), "\\\n", " ")
			for _, l := range strings.Split(joined, "\n") {
				l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
				if c, _, ok := strings.Cut(l, " #"); ok {
					l = c
				}
				l = strings.TrimPrefix(l, "sudo ")
				if i := strings.Index(l, "|"); i >= 0 {
					l = l[:i]
				}
				if i := strings.Index(l, "||"); i >= 0 {
					l = l[:i]
				}
				for _, prefix := range []string{"bin/mcotui", "mcotui"} {
					if l == prefix || strings.HasPrefix(l, prefix+" ") {
						args := strings.Fields(strings.TrimPrefix(l, prefix))
						checked++
						if err := parses(args); err != nil {
							t.Errorf("%s:%d: %q: %v", b.file, b.line, l, err)
						}
						break
					}
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d command lines; the docs hold more", checked)
	}
}

// parses finds the command args name and parses its flags, as the command line would.
func parses(args []string) error {
	root := cmd.NewRootCmd(&cmdutil.Factory{IOStreams: cmdutil.IOStreams{In: bytes.NewReader(nil), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
	root.InitDefaultCompletionCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil && !errors.Is(err, pflag.ErrHelp) {
		return fmt.Errorf("mcotui %s: %w", c.Name(), err)
	}
	if c == root && len(c.Flags().Args()) > 0 {
		return fmt.Errorf("no command %q", c.Flags().Args()[0])
	}
	return nil
}

// TestDocsTUIKeys: every binding of the TUI's keymap (tui/keys) is in docs/tui.md, by one
// of its keys or its help's key, in backticks.
func TestDocsTUIKeys(t *testing.T) {
	data, err := os.ReadFile("docs/tui.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	glyph := map[string]string{"up": "↑", "down": "↓", "left": "←", "right": "→", "pgdown": "pgdn"}
	documented := func(b key.Binding) bool {
		for _, k := range append(b.Keys(), b.Help().Key) {
			if g, ok := glyph[k]; ok {
				k = g
			}
			if strings.Contains(page, "`"+k+"`") {
				return true
			}
		}
		return false
	}
	km := reflect.ValueOf(keys.Default()).Elem()
	n := 0
	for i := range km.NumField() {
		var bs []key.Binding
		switch f := km.Field(i).Interface().(type) {
		case key.Binding:
			bs = []key.Binding{f}
		case [7]key.Binding:
			bs = f[:]
		default:
			t.Fatalf("keys.KeyMap.%s is a %T: teach this test to read it", km.Type().Field(i).Name, f)
		}
		for _, b := range bs {
			n++
			if !documented(b) {
				t.Errorf("docs/tui.md does not document keys.KeyMap.%s (%v, %q)", km.Type().Field(i).Name, b.Keys(), b.Help().Desc)
			}
		}
	}
	if n < 40 {
		t.Errorf("read %d bindings; the keymap has more", n)
	}
}

// TestDocsMetrics: every mcotui_* metric the controller and the agent define is named in
// docs/monitoring.md or docs/agent.md.
func TestDocsMetrics(t *testing.T) {
	var docs []byte
	for _, f := range []string{"docs/monitoring.md", "docs/agent.md"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data...)
	}
	n := 0
	for _, src := range []string{"controller/metrics.go", "agent/metrics.go"} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(mcotui_[a-z_]+)"`).FindAllSubmatch(data, -1) {
			n++
			if !bytes.Contains(docs, []byte("`"+string(m[1])+"`")) {
				t.Errorf("%s defines %s; docs/monitoring.md does not document it", src, m[1])
			}
		}
	}
	if n < 12 {
		t.Errorf("found %d metrics in the sources; they define more", n)
	}
}

// TestReadmeFrontPage: a newcomer who reads only the first screen of README.md finds the
// two commands that matter, and the front page stays short; detail goes in docs/.
func TestReadmeFrontPage(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	first := strings.Join(lines[:min(24, len(lines))], "\n")
	for _, want := range []string{"make demo", "make test"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first screen (24 lines) lacks %q", want)
		}
	}
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines: keep it a front page (about 150) and move detail into docs/", len(lines))
	}
}
