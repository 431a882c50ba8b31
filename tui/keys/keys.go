// Package keys is the TUI's one keymap. Every pane takes its bindings from here and the
// help overlay and footer are built from the same bindings, so a key's help can never
// disagree with what it does.
package keys

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the TUI.
type KeyMap struct {
	// Global.
	Quit     key.Binding
	Help     key.Binding
	Command  key.Binding
	Filter   key.Binding
	NextPane key.Binding
	PrevPane key.Binding
	Back     key.Binding

	// Moving in a list or a document.
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	HalfUp   key.Binding
	HalfDown key.Binding
	Top      key.Binding
	Bottom   key.Binding

	// Lists.
	Open     key.Binding
	Sort     key.Binding
	Reverse  key.Binding
	AllPools key.Binding

	// Prompts (`/` and `:`).
	Submit key.Binding
	Cancel key.Binding
}

// Default returns the default keymap: vi keys and arrows, k9s's `:`, `/`, `?` and esc.
func Default() *KeyMap {
	return &KeyMap{
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Command:  key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "jump to pane")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),

		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		HalfUp:   key.NewBinding(key.WithKeys("ctrl+u"), key.WithHelp("ctrl+u", "half page up")),
		HalfDown: key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "half page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),

		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by next column")),
		Reverse:  key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		AllPools: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "all pools")),

		Submit: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// Global is the bindings that work in every pane, for help.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.Help, k.Command, k.Filter, k.NextPane, k.PrevPane, k.Back, k.Quit}
}

// Navigation is the bindings that move through a list or a document, for help.
func (k *KeyMap) Navigation() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.HalfUp, k.HalfDown, k.Top, k.Bottom}
}
