package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/dialog"
)

// showConfigYAML opens a MachineConfig's YAML, as `oc get mc NAME -o yaml` prints it
// (from the cache, which keeps no managedFields), in the text view the pod and pool
// YAML use: the screen's width, lines whole (valid YAML to copy), searchable.
func (u *UI) showConfigYAML(mc *mcfgv1.MachineConfig) {
	text := textsafe.EscapeLines(toYAML(mc, mcfgv1.GroupVersion.WithKind("MachineConfig")))
	u.openDialog(dialog.NewText(u.c, "MachineConfig "+mc.Name+" (YAML)", text, false))
}

// configKey handles the configs view's keys that depend on what is under its cursor: y
// shows its YAML; on a MachineConfig the pool selects (not a rendered one), enter shows
// its YAML too, and the keys that act on rendered configs (d, x, R) say so rather than
// act on another. It reports whether it handled the key.
func (u *UI) configKey(msg tea.KeyPressMsg) bool {
	k := u.c.Keys
	mc := u.configs.Current()
	if mc == nil || !key.Matches(msg, k.YAML, k.Diff, k.Mark, k.Rollback) {
		return false
	}
	onSource := u.configs.Selected() == ""
	switch {
	case key.Matches(msg, k.YAML) || (onSource && msg.String() == "enter"):
		u.showConfigYAML(mc)
	case !onSource:
		return false
	default:
		u.setNotice(fmt.Sprintf("%s acts on a rendered config: %s is one the pool merges (y shows its YAML)", msg.String(), mc.Name), true)
	}
	return true
}

// machineConfigArg is :mc NAME (:machineconfigs NAME): the MachineConfig's YAML. It
// reports whether NAME is a MachineConfig's.
func (u *UI) machineConfigArg(name string) bool {
	mc := u.c.Store.MachineConfig(name)
	if mc == nil {
		return false
	}
	u.showConfigYAML(mc)
	return true
}
