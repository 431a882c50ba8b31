// Package docgen writes mcotui's command reference from the command tree itself, with
// cobra's own generator: a markdown page per command (docs/reference, committed, and
// checked against the tree by this package's test) and a man page per command (section
// 1, written by make install). The reference cannot say what the commands do not.
package docgen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/mcotui/mcotui/cmd"
	"github.com/mcotui/mcotui/cmd/cmdutil"
)

// Root is the command tree as a user's binary runs it: with cobra's help and completion
// commands, which Execute adds, and without the date stamp cobra puts in every page (a
// page changes when its command does, not every day).
func Root() *cobra.Command {
	f := &cmdutil.Factory{
		IOStreams: cmdutil.IOStreams{In: bytes.NewReader(nil), Out: io.Discard, ErrOut: io.Discard},
		Version:   "dev",
	}
	root := cmd.NewRootCmd(f)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true
	return root
}

// Markdown writes a page per command into dir, named as cobra names them
// (mcotui_rollout.md), linked to their parent and children.
func Markdown(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("command reference: %w", err)
	}
	if err := doc.GenMarkdownTree(Root(), dir); err != nil {
		return fmt.Errorf("command reference in %s: %w", dir, err)
	}
	return nil
}

// Man writes a section-1 man page per command into dir (mcotui-rollout.1). Their date
// is SOURCE_DATE_EPOCH's when set (reproducible builds), else date's.
func Man(dir, version string, date time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	header := &doc.GenManHeader{
		Title:   "MCOTUI",
		Section: "1",
		Source:  "mcotui " + version,
		Manual:  "mcotui manual",
	}
	if os.Getenv("SOURCE_DATE_EPOCH") == "" {
		header.Date = &date
	}
	if err := doc.GenManTree(Root(), header, dir); err != nil {
		return fmt.Errorf("man pages in %s: %w", dir, err)
	}
	return nil
}

// Files lists the names of the regular files in dir, for comparing two trees.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, filepath.Base(e.Name()))
		}
	}
	return names, nil
}
