package configs

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// DiffText lays out a Diff for people, width cells wide, the way `mcotui diff` reads:
// what changes, then what the node does about it (the node disruption policy's
// actions, each with the change that asked for it), then whether a running node can
// make the change at all.
func DiffText(st *styles.Styles, d model.Diff, width int) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(ansi.Truncate(fmt.Sprintf(format, args...), width, "…"))
		b.WriteByte('\n')
	}
	mark := func(k configdiff.ChangeKind) string {
		switch k {
		case configdiff.Added:
			return st.OK.Render("+")
		case configdiff.Removed:
			return st.Error.Render("-")
		}
		return st.Warn.Render("~")
	}
	entries := func(e configdiff.EntryChanges) {
		for _, p := range e.Added {
			line("  %s %s", mark(configdiff.Added), p)
		}
		for _, p := range e.Changed {
			line("  %s %s", mark(configdiff.Changed), p)
		}
		for _, p := range e.Removed {
			line("  %s %s", mark(configdiff.Removed), p)
		}
	}
	list := func(l *configdiff.ListChange) {
		for _, a := range l.Added {
			line("  %s %s", mark(configdiff.Added), a)
		}
		for _, r := range l.Removed {
			line("  %s %s", mark(configdiff.Removed), r)
		}
		if len(l.Added)+len(l.Removed) == 0 {
			line("  %s order changed: %s", mark(configdiff.Changed), strings.Join(l.New, " "))
		}
	}
	section := func(s string) { line("%s", st.Section.Render(s)) }

	line("%s %s", st.Label.Render("from"), orNone(d.From))
	line("%s %s", st.Label.Render("to  "), orNone(d.To))
	b.WriteByte('\n')
	c := d.Changes
	if c.Empty() {
		line("%s", st.Dim.Render("No changes a node applies."))
	}
	if n := c.Files.Len(); n > 0 {
		section(fmt.Sprintf("Files (%d)", n))
		entries(c.Files)
	}
	if len(c.Units) > 0 {
		section(fmt.Sprintf("Units (%d)", len(c.Units)))
		for _, u := range c.Units {
			line("  %s %s%s", mark(u.Kind), u.Name, unitDetail(u))
		}
	}
	if u := c.CoreUser; u != nil {
		section("Core user")
		if k := u.SSHKeys; k != nil {
			for range k.Added {
				line("  %s SSH key", mark(configdiff.Added))
			}
			for range k.Removed {
				line("  %s SSH key", mark(configdiff.Removed))
			}
			if len(k.Added)+len(k.Removed) == 0 {
				line("  %s SSH keys reordered", mark(configdiff.Changed))
			}
		}
		if u.PasswordHash {
			line("  %s password hash", mark(configdiff.Changed))
		}
	}
	if k := c.KernelArguments; k != nil {
		section("Kernel arguments")
		list(k)
	}
	if o := c.OSImageURL; o != nil {
		section("OS image")
		line("  %s %s", mark(configdiff.Removed), orNone(o.Old))
		line("  %s %s", mark(configdiff.Added), orNone(o.New))
	}
	if k := c.KernelType; k != nil {
		section("Kernel type")
		line("  %s → %s", k.Old, k.New)
	}
	if e := c.Extensions; e != nil {
		section("Extensions")
		list(e)
	}
	if f := c.FIPS; f != nil {
		section("FIPS")
		line("  %t → %t", f.Old, f.New)
	}
	b.WriteByte('\n')

	if len(d.Reasons) > 0 {
		section("Predicted actions")
		line("  %s", st.Error.Render("none: a running node cannot apply this change"))
		for _, r := range d.Reasons {
			for _, l := range strings.Split(ansi.Wrap(r.String(), max(20, width-4), " "), "\n") {
				line("    %s", l)
			}
		}
		return strings.TrimRight(b.String(), "\n")
	}
	section("Predicted actions")
	line("  %s %s", st.Label.Render("actions"), Actions(st, d.Decision))
	drain := "no"
	if d.Decision.Drain {
		drain = st.Warn.Render("yes")
	}
	if d.Decision.DrainNote != "" {
		drain += "  " + st.Dim.Render(d.Decision.DrainNote)
	}
	line("  %s %s", st.Label.Render("drain  "), drain)
	if len(d.Decision.Causes) > 0 {
		w := 0
		for _, cs := range d.Decision.Causes {
			w = max(w, len(cs.Subject()))
		}
		for _, cs := range d.Decision.Causes {
			line("    %-*s  %s  %s", w, cs.Subject(), disruption.Join(cs.Actions), st.Dim.Render(cs.Decider()))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// ContentText lays out the content diffs of the changed files, width cells wide,
// under a section of its own: each file's unified hunks, its mode change, or why its
// contents are not shown (binary, too large, not a data: URL). Lines from the files are
// escaped, so a file cannot write to the terminal.
func ContentText(st *styles.Styles, fds []configdiff.FileDiff, width int) string {
	if len(fds) == 0 {
		return ""
	}
	var b strings.Builder
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, width, "…"))
		b.WriteByte('\n')
	}
	b.WriteString("\n\n")
	line(st.Section.Render("File contents"))
	for _, d := range fds {
		mark := map[configdiff.ChangeKind]string{
			configdiff.Added: st.OK.Render("+"), configdiff.Removed: st.Error.Render("-"),
		}[d.Kind]
		if mark == "" {
			mark = st.Warn.Render("~")
		}
		line("  " + mark + " " + st.Label.Render(textsafe.Escape(d.Path)))
		if d.OldMode != d.NewMode {
			line(fmt.Sprintf("    mode %04o → %04o", d.OldMode, d.NewMode))
		}
		switch {
		case d.Err != nil:
			line("    " + st.Dim.Render("contents not shown: "+textsafe.Escape(d.Err.Error())))
		case d.Binary:
			line("    " + st.Dim.Render("binary contents differ (not shown)"))
		}
		for _, h := range d.Hunks {
			text := "    " + textsafe.Escape(h)
			switch {
			case strings.HasPrefix(h, "@@"):
				text = st.Dim.Render(text)
			case strings.HasPrefix(h, "+"):
				text = st.OK.Render(text)
			case strings.HasPrefix(h, "-"):
				text = st.Error.Render(text)
			}
			line(text)
		}
		if d.Truncated {
			line("    " + st.Dim.Render(fmt.Sprintf("… %d more lines of diff not shown", d.Lines-len(d.Hunks))))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Actions is a decision's actions, Reboot standing out.
func Actions(st *styles.Styles, d disruption.Decision) string {
	s := disruption.Join(d.Actions)
	for _, a := range d.Actions {
		if a.Type == "Reboot" {
			return st.Warn.Render(s)
		}
	}
	return s
}

func unitDetail(u configdiff.UnitChange) string {
	var parts []string
	if u.Contents {
		parts = append(parts, "contents")
	}
	if u.Enabled != nil {
		parts = append(parts, "enabled "+tri(u.Enabled.Old)+" → "+tri(u.Enabled.New))
	}
	if u.Mask != nil {
		parts = append(parts, "mask "+tri(u.Mask.Old)+" → "+tri(u.Mask.New))
	}
	if n := u.Dropins.Len(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d drop-ins", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func tri(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
