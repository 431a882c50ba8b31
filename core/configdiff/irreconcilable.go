package configdiff

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Limits of MachineConfigNode status.irreconcilableChanges, from its schema.
const (
	MaxIrreconcilableChanges = 32
	maxIrreconcilableDiff    = 4096
	maxIrreconcilablePath    = 70
)

// Layout is the part of a config a running node never acts on and that stays as the
// node was installed: Ignition's storage disks, raid, filesystems and luks. It is what
// MCO's irreconcilable-differences reporter keeps of a MachineConfig
// (patchDaemonManagedFields) to compare the node's install-time config with its target.
type Layout struct {
	Disks       []types.Disk       `json:"disks,omitempty"`
	Raid        []types.Raid       `json:"raid,omitempty"`
	Filesystems []types.Filesystem `json:"filesystems,omitempty"`
	Luks        []types.Luks       `json:"luks,omitempty"`
}

// LayoutOf is cfg's Layout.
func LayoutOf(cfg Config) Layout {
	s := cfg.Ignition.Storage
	return Layout{Disks: s.Disks, Raid: s.Raid, Filesystems: s.Filesystems, Luks: s.Luks}
}

// IrreconcilableChanges lists how target's layout differs from base's, the layout the
// node was installed with, as MachineConfigNode status.irreconcilableChanges (MCO 4.20's
// IrreconcilableMachineConfig feature): one entry per differing entry of each section,
// fieldPath spec.config.storage.<section>[<index>], diff the entry's JSON on a "- "
// line (what the node has) and a "+ " line (what the config says), as jd renders them.
// These are the changes MachineConfiguration spec.irreconcilableValidationOverrides
// lets through: only nodes provisioned from now on get them. Entries beyond the
// schema's 32 are folded into one per section; a diff over 4096 bytes is cut.
func IrreconcilableChanges(base, target Layout) []mcfgv1.IrreconcilableChangeDiff {
	sections := []struct {
		name     string
		old, new any
	}{
		{"disks", base.Disks, target.Disks},
		{"raid", base.Raid, target.Raid},
		{"filesystems", base.Filesystems, target.Filesystems},
		{"luks", base.Luks, target.Luks},
	}
	var per [][]mcfgv1.IrreconcilableChangeDiff
	total := 0
	for _, s := range sections {
		ds := entryDiffs("spec.config.storage."+s.name, reflect.ValueOf(s.old), reflect.ValueOf(s.new))
		per = append(per, ds)
		total += len(ds)
	}
	var out []mcfgv1.IrreconcilableChangeDiff
	for i, ds := range per {
		if total > MaxIrreconcilableChanges && len(ds) > 1 {
			s := sections[i]
			ds = []mcfgv1.IrreconcilableChangeDiff{{
				FieldPath: "spec.config.storage." + s.name,
				Diff:      render(s.old, s.new),
			}}
		}
		out = append(out, ds...)
	}
	if len(out) > MaxIrreconcilableChanges {
		out = out[:MaxIrreconcilableChanges]
	}
	return out
}

// entryDiffs compares two lists entry by entry, by index as jd does.
func entryDiffs(field string, old, new reflect.Value) []mcfgv1.IrreconcilableChangeDiff {
	var out []mcfgv1.IrreconcilableChangeDiff
	for i := range max(old.Len(), new.Len()) {
		var o, n any
		if i < old.Len() {
			o = old.Index(i).Interface()
		}
		if i < new.Len() {
			n = new.Index(i).Interface()
		}
		if o != nil && n != nil && same(o, n) {
			continue
		}
		path := fmt.Sprintf("%s[%d]", field, i)
		if len(path) > maxIrreconcilablePath {
			path = field
		}
		out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: path, Diff: render(o, n)})
	}
	return out
}

// render writes a "- old" and a "+ new" line, each present when that side has a value.
func render(old, new any) string {
	var s string
	if old != nil && !reflect.ValueOf(old).IsZero() {
		s += "- " + compact(old) + "\n"
	}
	if new != nil && !reflect.ValueOf(new).IsZero() {
		s += "+ " + compact(new) + "\n"
	}
	if s == "" {
		s = "~ an empty entry\n" // the schema wants a diff of at least one character
	}
	if len(s) > maxIrreconcilableDiff {
		const cut = " ...(cut)\n"
		s = s[:maxIrreconcilableDiff-len(cut)] + cut
	}
	return s
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
