package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

var filterNone model.Filter

func newPrompt(c *common.Common) textinput.Model {
	ti := textinput.New()
	ti.SetStyles(promptStyles(c.Styles))
	ti.ShowSuggestions = true
	return ti
}

// promptStyles are the prompt's styles. The cursor does not blink: a blinking cursor is
// a timer that redraws twice a second for nothing, and it would make every golden file
// depend on when it was taken.
func promptStyles(st *styles.Styles) textinput.Styles {
	s := textinput.DefaultStyles(true)
	s.Focused.Prompt = st.Prompt
	s.Blurred.Prompt = st.Prompt
	s.Focused.Suggestion = st.Dim
	s.Cursor.Blink = false
	return s
}

// commands are the `:` commands: where to jump, and a few verbs.
var commands = []string{"pools", "nodes", "detail", "configs", "bootimages", "builds", "pods", "events", "pdb", "ctx", "messages", "help", "all", "quit"}

func (u *UI) openPrompt(kind promptKind) tea.Cmd {
	u.promptKind = kind
	u.promptErr = ""
	u.prompt.Reset()
	switch kind {
	case promptFilter:
		u.prompt.Prompt = "/"
		u.prevFilter = u.grid.Query().Filter
		u.prompt.SetValue(u.prevFilter.String())
		u.prompt.SetSuggestions(nil)
	case promptCommand:
		u.prompt.Prompt = ":"
		sugg := append([]string(nil), commands...)
		for _, p := range u.c.Store.Pools() {
			sugg = append(sugg, "pool "+p.Name, "configs "+p.Name)
		}
		for _, mc := range u.c.Store.MachineConfigs() {
			sugg = append(sugg, "mc "+mc.Name)
		}
		u.prompt.SetSuggestions(sugg)
	}
	u.prompt.CursorEnd()
	return u.prompt.Focus()
}

func (u *UI) closePrompt() {
	u.promptKind = promptNone
	u.prompt.Blur()
}

// promptKey handles a key while a prompt is open. The filter applies as it is typed, so
// the grid narrows with each key; esc puts back the filter there was.
func (u *UI) promptKey(msg tea.KeyPressMsg) tea.Cmd {
	k := u.c.Keys
	switch {
	case msg.String() == "ctrl+c":
		return u.quit()
	case key.Matches(msg, k.Cancel):
		if u.promptKind == promptFilter {
			u.setFilter(u.prevFilter)
		}
		u.closePrompt()
		return nil
	case key.Matches(msg, k.Submit):
		kind, text := u.promptKind, strings.TrimSpace(u.prompt.Value())
		u.closePrompt()
		if kind == promptCommand {
			return u.command(text)
		}
		if f, err := model.ParseFilter(text); err != nil {
			u.setFilter(u.prevFilter)
			u.promptErr = err.Error()
		} else {
			u.setFilter(f)
		}
		return nil
	}
	var cmd tea.Cmd
	u.prompt, cmd = u.prompt.Update(msg)
	if u.promptKind == promptFilter {
		// An unfinished term ("phase:dr" is fine, "phase:x" is not yet) leaves the
		// last good filter in place rather than flashing an empty grid.
		if f, err := model.ParseFilter(u.prompt.Value()); err == nil {
			u.setFilter(f)
			u.promptErr = ""
		} else {
			u.promptErr = err.Error()
		}
	}
	return cmd
}

func (u *UI) setFilter(f model.Filter) {
	q := u.grid.Query()
	if q.Filter.String() == f.String() {
		return
	}
	q.Filter = f
	u.grid.SetQuery(q)
}

// verbs are every word the palette knows, with k9s's resource names and short names
// as aliases (:no, :machineconfigs, :mcp), mapped to the verb that runs them.
var verbs = map[string]string{
	"q": "quit", "quit": "quit", "q!": "quit",
	"pools": "pools", "pool": "pools", "mcp": "pools", "machineconfigpool": "pools", "machineconfigpools": "pools",
	"all":     "all",
	"configs": "configs", "config": "configs", "mc": "configs", "machineconfig": "configs", "machineconfigs": "configs", "rendered": "configs",
	"bootimages": "bootimages", "bootimage": "bootimages", "bi": "bootimages", "machinesets": "bootimages", "machineset": "bootimages", "ms": "bootimages",
	"builds": "builds", "build": "builds", "mosb": "builds", "machineosbuild": "builds", "machineosbuilds": "builds",
	"mosc": "builds", "machineosconfig": "builds", "machineosconfigs": "builds", "streams": "builds", "osimagestream": "builds", "osimagestreams": "builds",
	"nodes": "nodes", "node": "nodes", "no": "nodes", "grid": "nodes", "mcn": "nodes", "machineconfignode": "nodes", "machineconfignodes": "nodes",
	"detail": "detail", "help": "help", "messages": "messages", "notices": "messages",
	"pods": "pods", "po": "pods", "pod": "pods",
	"events": "events", "ev": "events", "event": "events",
	"pdb": "pdb", "poddisruptionbudget": "pdb", "poddisruptionbudgets": "pdb",
	"ctx": "ctx", "context": "ctx", "contexts": "ctx",
}

// resolveVerb is the verb a typed word names: itself or its alias, else the one verb
// it is a prefix of (:boot, :machinec), as k9s matches; ok is false when it names none
// or several, which are returned to list.
func resolveVerb(word string) (verb string, ok bool, candidates []string) {
	if v, ok := verbs[word]; ok {
		return v, true, nil
	}
	seen := map[string]bool{}
	for w, v := range verbs {
		if strings.HasPrefix(w, word) {
			seen[v] = true
			candidates = append(candidates, w)
		}
	}
	slices.Sort(candidates)
	if len(seen) == 1 {
		return verbs[candidates[0]], true, nil
	}
	return "", false, candidates
}

// command runs a `:` command.
func (u *UI) command(text string) tea.Cmd {
	verb, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	arg = strings.TrimSpace(arg)
	if verb != "" {
		v, ok, candidates := resolveVerb(verb)
		switch {
		case !ok && len(candidates) > 0:
			u.promptErr = fmt.Sprintf("%q is ambiguous: %s", verb, strings.Join(candidates, ", "))
			return nil
		case ok:
			verb = v
		}
	}
	switch verb {
	case "":
		return nil
	case "q", "quit":
		return u.askQuit(false)
	case "pools", "pool", "mcp":
		u.view = viewMain
		if arg == "" {
			u.setFocus(panePools)
			return nil
		}
		if u.c.Store.Pool(arg) == nil {
			u.promptErr = fmt.Sprintf("no pool %q", arg)
			return nil
		}
		u.scope(arg)
	case "all":
		u.view = viewMain
		u.scope("")
	case "configs", "config", "mc":
		switch {
		case arg != "" && u.c.Store.Pool(arg) == nil && u.machineConfigArg(arg):
			// :mc NAME, as k9s opens one: its YAML.
			return nil
		case arg != "" && u.c.Store.Pool(arg) == nil:
			u.promptErr = fmt.Sprintf("no pool or MachineConfig %q", arg)
			return nil
		case arg != "":
			u.configs.SetPool(arg)
		case u.configs.Pool() == "":
			if p := u.currentPool(); p != nil {
				u.configs.SetPool(p.Name)
			}
		}
		u.view = viewConfigs
	case "bootimages", "bootimage", "bi", "machinesets":
		u.view = viewBootImages
	case "builds":
		// :builds [NAME] selects that MachineOSBuild, or a MachineOSConfig's newest.
		if arg != "" && !u.builds.Select(arg) {
			u.promptErr = fmt.Sprintf("no MachineOSBuild or MachineOSConfig %q", arg)
			return nil
		}
		u.openBuilds()
	case "nodes", "node", "grid", "mcn", "detail":
		u.view = viewMain
		switch {
		case arg != "":
			if u.c.Store.Node(arg) == nil {
				u.promptErr = fmt.Sprintf("no node %q", arg)
				return nil
			}
			return u.open(arg)
		case verb == "detail":
			if n := u.grid.Selected(); n != nil {
				return u.open(n.Name)
			} else if u.detail.Name() != "" {
				u.showDetail = true
				u.setFocus(paneNodes)
			}
		default:
			u.showDetail = false
			u.setFocus(paneNodes)
		}
	case "pods":
		// :pods [NODE] lists a node's pods; :pod NAMESPACE/NAME opens one.
		if strings.Contains(arg, "/") {
			return u.openPod(arg)
		}
		node, ok := u.nodeArg(arg)
		if !ok {
			return nil
		}
		return u.podsOn(node)
	case "events":
		return u.clusterEvents()
	case "pdb":
		node, ok := u.nodeArg(arg)
		if !ok {
			return nil
		}
		b, ok := u.blockerOf(node)
		if !ok {
			u.promptErr = fmt.Sprintf("node %s: no pod holds its drain back", node)
			return nil
		}
		return u.budgets(b)
	case "ctx":
		return u.switchContext(arg)
	case "help":
		u.openHelp()
	case "messages":
		u.openMessages()
	default:
		u.promptErr = fmt.Sprintf("unknown command %q: try %s, pool NAME, node NAME, configs POOL", verb, strings.Join(commands, ", "))
	}
	return nil
}
