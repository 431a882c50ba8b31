package tuitest

import tea "charm.land/bubbletea/v2"

// Typed is text as a user types it, one key press per rune.
func Typed(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}

// Special is presses of keys that type no text (tea.KeyEnter, tea.KeyTab, ...).
func Special(codes ...rune) []tea.Msg {
	var out []tea.Msg
	for _, c := range codes {
		out = append(out, tea.KeyPressMsg{Code: c})
	}
	return out
}

// Seq joins key sequences.
func Seq(parts ...[]tea.Msg) []tea.Msg {
	var out []tea.Msg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
