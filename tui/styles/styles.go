// Package styles holds every Lip Gloss style the TUI draws with, in one place, so panes
// share a look and NO_COLOR is one switch. Lip Gloss v2 has no global renderer: styles
// are plain values, built per program (so per SSH session), and the program's colour
// profile decides at output time how far colours are downsampled.
package styles

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/mcotui/mcotui/core/phase"
)

// Glyphs of the phase grid, one per phase.State. They differ in shape, not only colour,
// so the grid reads the same without colour. All are of neutral East Asian width: an
// ambiguous-width glyph (●, ◐, …) takes two cells in CJK terminals and would shear the
// grid for the readers of the Chinese and Japanese OpenShift docs.
const (
	GlyphNotStarted = "∙"
	GlyphInProgress = "↻"
	GlyphFailed     = "✗"
	GlyphDone       = "✓"
	GlyphAbsent     = " " // no such condition on the MachineConfigNode
	// GlyphBehind marks, in the UPDATED column, a node that runs its own desired config
	// while its pool targets another: the rollout has not reached it yet.
	GlyphBehind = "⇣"
	// GlyphStaging marks, in the UPDATED column, a node behind the pool's target that
	// downloads the target's OS image before its drain (rollout.NodeStage); a failed
	// download it retries is GlyphWaiting. Neutral width.
	GlyphStaging = "⇩"
	// GlyphWaiting marks a phase in progress that reports what holds it (a drain
	// waiting on a PodDisruptionBudget, retried by the agent): not a failure, and not
	// moving either. An hourglass of neutral width.
	GlyphWaiting = "⧖"
)

// GlyphNarration marks the embedder's narration line (tui.Options.Narration); neutral
// width for the same reason.
const GlyphNarration = "▸"

// Progress bar cells, neutral width for the same reason.
const (
	BarFull  = "▪"
	BarEmpty = "▫"
)

// Styles is the TUI's whole look.
type Styles struct {
	// Color is false under NO_COLOR or a colourless profile: styles then use only text
	// attributes (bold, reverse, underline), so nothing depends on colour to be seen.
	Color bool

	Title        lipgloss.Style // a pane's title line
	TitleFocused lipgloss.Style // the focused pane's title line
	Header       lipgloss.Style // a table's column headers
	Selected     lipgloss.Style // the selected row of the focused pane
	SelectedDim  lipgloss.Style // the selected row of a pane without focus
	Dim          lipgloss.Style
	Bold         lipgloss.Style
	Error        lipgloss.Style
	Warn         lipgloss.Style
	OK           lipgloss.Style
	Paused       lipgloss.Style

	// State colours a phase state's glyph or word; Glyph is State[s] applied to s's glyph,
	// rendered once here so that drawing a grid cell is a string copy.
	State [4]lipgloss.Style
	Glyph [4]string
	// Waiting is GlyphWaiting, rendered once.
	Waiting string
	// Behind is GlyphBehind, rendered once; Staging GlyphStaging.
	Behind  string
	Staging string

	// BarFull, BarEmpty and BarDegraded are progress bar cells, rendered once.
	BarFull, BarEmpty, BarDegraded, BarPaused string

	Section lipgloss.Style // a heading in the detail pane
	Label   lipgloss.Style // "Name:" and the like in the detail pane

	StatusBar   lipgloss.Style
	StatusKey   lipgloss.Style
	StatusValue lipgloss.Style

	Prompt    lipgloss.Style
	PromptErr lipgloss.Style

	// NarrationMark and Narration draw the embedder's narration line: a story told over
	// the cluster (the demo's), set apart from the cluster's own data.
	NarrationMark lipgloss.Style
	Narration     lipgloss.Style

	Dialog      lipgloss.Style // the help overlay's box
	DialogTitle lipgloss.Style
	HelpKey     lipgloss.Style
	HelpDesc    lipgloss.Style
	Help        help.Styles // the footer's short help
}

// PlainGlyph is the glyph of state s without style, for rows drawn in one style (the
// selected row).
func PlainGlyph(s phase.State) string {
	return [...]string{GlyphNotStarted, GlyphInProgress, GlyphFailed, GlyphDone}[s]
}

// ForProfile returns the styles for a terminal colour profile: colourless at ASCII and
// below (NO_COLOR gives ASCII).
func ForProfile(p colorprofile.Profile) *Styles { return New(p > colorprofile.ASCII) }

// New returns the styles, with colour or without.
func New(color bool) *Styles {
	s := &Styles{Color: color}
	base := lipgloss.NewStyle()
	if color {
		// The 16 ANSI colours follow the terminal's theme, so the TUI reads on light and
		// dark backgrounds alike without asking the terminal which it has.
		s.Title = base.Foreground(lipgloss.BrightWhite).Background(lipgloss.BrightBlack).Bold(true)
		s.TitleFocused = base.Foreground(lipgloss.Black).Background(lipgloss.Cyan).Bold(true)
		s.Header = base.Foreground(lipgloss.Cyan).Bold(true)
		s.Selected = base.Foreground(lipgloss.Black).Background(lipgloss.Cyan)
		s.SelectedDim = base.Reverse(true)
		s.Dim = base.Foreground(lipgloss.BrightBlack)
		s.Error = base.Foreground(lipgloss.Red).Bold(true)
		s.Warn = base.Foreground(lipgloss.Yellow)
		s.OK = base.Foreground(lipgloss.Green)
		s.Paused = base.Foreground(lipgloss.Magenta).Bold(true)
		s.State = [4]lipgloss.Style{
			phase.NotStarted: base.Foreground(lipgloss.BrightBlack),
			phase.InProgress: base.Foreground(lipgloss.Yellow).Bold(true),
			phase.Failed:     base.Foreground(lipgloss.Red).Bold(true),
			phase.Done:       base.Foreground(lipgloss.Green),
		}
		s.Section = base.Foreground(lipgloss.Cyan).Bold(true)
		s.Label = base.Foreground(lipgloss.BrightBlack)
		s.StatusBar = base.Foreground(lipgloss.White).Background(lipgloss.Black)
		s.StatusKey = base.Foreground(lipgloss.Black).Background(lipgloss.Cyan).Bold(true)
		s.StatusValue = base.Foreground(lipgloss.White).Background(lipgloss.Black)
		s.Prompt = base.Foreground(lipgloss.Cyan).Bold(true)
		s.PromptErr = base.Foreground(lipgloss.Red)
		s.NarrationMark = base.Foreground(lipgloss.Yellow).Bold(true)
		s.Narration = base.Foreground(lipgloss.Yellow)
		s.Dialog = base.Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Cyan).Padding(0, 1)
		s.DialogTitle = base.Foreground(lipgloss.Cyan).Bold(true)
		s.HelpKey = base.Foreground(lipgloss.Cyan)
		s.HelpDesc = base
		s.Help = help.Styles{
			ShortKey:       base.Foreground(lipgloss.Cyan),
			ShortDesc:      base.Foreground(lipgloss.BrightBlack),
			ShortSeparator: base.Foreground(lipgloss.BrightBlack),
			Ellipsis:       base.Foreground(lipgloss.BrightBlack),
			FullKey:        base.Foreground(lipgloss.Cyan),
			FullDesc:       base.Foreground(lipgloss.BrightBlack),
			FullSeparator:  base.Foreground(lipgloss.BrightBlack),
		}
	} else {
		s.Title = base.Bold(true)
		s.TitleFocused = base.Bold(true).Reverse(true)
		// No underline: Lip Gloss draws an underlined string a cell at a time, which
		// multiplies the bytes a frame sends.
		s.Header = base.Bold(true)
		s.Selected = base.Reverse(true)
		s.SelectedDim = base.Bold(true)
		s.Dim = base.Faint(true)
		s.Error = base.Bold(true)
		s.Warn = base
		s.OK = base
		s.Paused = base.Bold(true)
		s.State = [4]lipgloss.Style{base, base.Bold(true), base.Bold(true), base}
		s.Section = base.Bold(true)
		s.Label = base
		s.StatusBar = base.Reverse(true)
		s.StatusKey = base.Reverse(true).Bold(true)
		s.StatusValue = base.Reverse(true)
		s.Prompt = base.Bold(true)
		s.PromptErr = base.Bold(true)
		s.NarrationMark = base.Bold(true)
		s.Narration = base
		s.Dialog = base.Border(lipgloss.NormalBorder()).Padding(0, 1)
		s.DialogTitle = base.Bold(true)
		s.HelpKey = base.Bold(true)
		s.HelpDesc = base
		s.Help = help.Styles{ShortKey: base.Bold(true), ShortDesc: base, ShortSeparator: base, Ellipsis: base,
			FullKey: base.Bold(true), FullDesc: base, FullSeparator: base}
	}
	for st := phase.NotStarted; st <= phase.Done; st++ {
		s.Glyph[st] = s.State[st].Render(PlainGlyph(st))
	}
	s.Behind = s.Warn.Bold(true).Render(GlyphBehind)
	s.Staging = s.State[phase.InProgress].Render(GlyphStaging)
	s.Waiting = s.Warn.Render(GlyphWaiting)
	s.BarFull = s.State[phase.Done].Render(BarFull)
	s.BarEmpty = s.Dim.Render(BarEmpty)
	s.BarDegraded = s.State[phase.Failed].Render(BarFull)
	s.BarPaused = s.Paused.Render(BarFull)
	return s
}
