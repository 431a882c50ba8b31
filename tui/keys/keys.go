// Package keys is the TUI's one keymap. Every pane takes its bindings from here and the
// help overlay and footer are built from the same bindings, so a key's help can never
// disagree with what it does.
package keys

import (
	"charm.land/bubbles/v2/key"

	"github.com/mcotui/mcotui/tui/action"
)

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
	// SortBy sorts the grid by one column, in model.SortKey order (name, pool, phase,
	// time in phase, status, current, desired); the column's key again reverses it.
	// k9s's shift+letter, a letter of the column's title that no other key takes.
	SortBy [7]key.Binding

	// Prompts (`/` and `:`).
	Submit key.Binding
	Cancel key.Binding

	// Views and what only reads.
	BootImages key.Binding // the boot images view
	Builds     key.Binding // the image builds view
	Configs    key.Binding // the configs view
	Main       key.Binding // back to pools and nodes
	Preview    key.Binding // a pool's rollout forecast
	YAML       key.Binding // the selected pool's or node's YAML
	Describe   key.Binding // describe the selected pool or node, with its Events
	Diff       key.Binding // diff two rendered configs
	Mark       key.Binding // mark a rendered config as the diff's base
	PrevPool   key.Binding // the configs view's pool
	NextPool   key.Binding
	// The pods an incident leads to, from a node (reads, as k9s's l and y).
	Logs    key.Binding // the node's agent's log; in a pod's view, the pod's
	Pod     key.Binding // the pod holding the node's drain back: its YAML
	Budgets key.Binding // that pod's PodDisruptionBudgets
	// In a node's detail, the next and previous of its drain's blockers: the pod o, B,
	// v and ctrl+k act on.
	NextBlocker key.Binding
	PrevBlocker key.Binding

	// Dialogs.
	Review   key.Binding // from an editor to the confirmation of its change
	Confirm  key.Binding
	Deny     key.Binding
	NextMode key.Binding
	PrevMode key.Binding

	// Actions that change the cluster: dangerous, in k9s's words. Each is tied to an
	// action.Kind (see Actions), and Restrict disables those a session does not offer,
	// so that a key that would do nothing is neither matched nor shown in help.
	Pause          key.Binding
	MaxUnavailable key.Binding
	StartRollout   key.Binding
	Rollback       key.Binding
	Retry          key.Binding
	BootImageMode  key.Binding
	EditSelector   key.Binding
	Drive          key.Binding // drive a pool's rollout from this terminal, or stop
	EvictPod       key.Binding // evict the pod holding the node's drain back
	DeletePod      key.Binding // delete it, past its budgets (k9s's ctrl-k, kill)
	Rebuild        key.Binding // ask MCO to rebuild a pool's OS image (builds view)
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
		SortBy: [7]key.Binding{
			key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "sort by NAME")),
			key.NewBinding(key.WithKeys("O"), key.WithHelp("O", "sort by POOL")),
			key.NewBinding(key.WithKeys("H"), key.WithHelp("H", "sort by phase")),
			key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "sort by IN PHASE")),
			key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "sort by STATUS")),
			key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "sort by CURRENT")),
			key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "sort by DESIRED")),
		},

		Submit: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),

		BootImages: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "boot images")),
		Builds:     key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "image builds")),
		Configs:    key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "configs of the pool")),
		Main:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "pools and nodes")),
		Preview:    key.NewBinding(key.WithKeys("P"), key.WithHelp("P", "preview rollout")),
		YAML:       key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "YAML")),
		Describe:   key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "describe, with Events")),
		Diff:       key.NewBinding(key.WithKeys("d", "enter"), key.WithHelp("d", "diff with the base")),
		Mark:       key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "mark as diff base")),
		PrevPool:   key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "previous pool")),
		NextPool:   key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "next pool")),
		Logs:       key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "logs of node's agent")),
		Pod:        key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "pod blocking drain")),
		Budgets:    key.NewBinding(key.WithKeys("B"), key.WithHelp("B", "that pod's budgets")),
		// k9s leaves [ and ] to its command history, which has no use in a detail.
		NextBlocker: key.NewBinding(key.WithKeys("]"), key.WithHelp("]/[", "next/previous blocking pod")),
		PrevBlocker: key.NewBinding(key.WithKeys("[")),

		Review:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "review the change")),
		Confirm:  key.NewBinding(key.WithKeys("y", "enter"), key.WithHelp("y/enter", "confirm")),
		Deny:     key.NewBinding(key.WithKeys("n", "esc", "q"), key.WithHelp("esc", "cancel")),
		NextMode: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next mode")),
		PrevMode: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous mode")),

		Pause:          key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume pool")),
		MaxUnavailable: key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "set maxUnavailable")),
		StartRollout:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "start rollout")),
		Rollback:       key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "roll back pool")),
		Retry:          key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry failed node")),
		BootImageMode:  key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "change mode")),
		EditSelector:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit Partial selector")),
		Drive:          key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "drive rollout/stop")),
		EvictPod:       key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "evict the pod holding the drain")),
		DeletePod:      key.NewBinding(key.WithKeys("ctrl+k"), key.WithHelp("ctrl+k", "delete that pod, past its budget")),
		Rebuild:        key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "rebuild the OS image")),
	}
}

// actions ties each dangerous binding to the kind of action it starts.
func (k *KeyMap) actions() map[*key.Binding]action.Kind {
	return map[*key.Binding]action.Kind{
		&k.Pause:          action.Pause,
		&k.MaxUnavailable: action.MaxUnavailable,
		&k.StartRollout:   action.Rollout,
		&k.Rollback:       action.Rollback,
		&k.Retry:          action.Retry,
		&k.BootImageMode:  action.BootImageMode,
		&k.EditSelector:   action.BootImageMode,
		&k.Drive:          action.Drive,
		&k.EvictPod:       action.Pod,
		&k.DeletePod:      action.Pod,
		&k.Rebuild:        action.Rebuild,
	}
}

// Restrict disables every dangerous binding whose action the session does not offer:
// all of them in read-only mode (k9s's ClearDanger), those MCO keeps to itself on
// OpenShift. A disabled binding matches no key and is left out of every help.
func (k *KeyMap) Restrict(offered func(action.Kind) bool) {
	for b, kind := range k.actions() {
		b.SetEnabled(offered(kind))
	}
}

// Dangerous is every binding that changes the cluster, enabled or not, for tests and
// help.
func (k *KeyMap) Dangerous() []key.Binding {
	return []key.Binding{k.Pause, k.MaxUnavailable, k.StartRollout, k.Rollback, k.Retry, k.BootImageMode, k.EditSelector, k.Drive, k.EvictPod, k.DeletePod, k.Rebuild}
}

// Global is the bindings that work in every pane, for help.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.Help, k.Command, k.Filter, k.NextPane, k.PrevPane, k.Back, k.BootImages, k.Builds, k.Configs, k.Quit}
}

// Navigation is the bindings that move through a list or a document, for help.
func (k *KeyMap) Navigation() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.HalfUp, k.HalfDown, k.Top, k.Bottom}
}
