package configdiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

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
// node was installed with, as MachineConfigNode status.irreconcilableChanges (MCO's
// IrreconcilableMachineConfig feature, pkg/daemon/irreconcilable_diff_reporter.go): one
// entry per changed field, its fieldPath the JSON path of the field in the
// MachineConfig (spec.config.storage.disks[0].device), its diff the old value on a
// "- " line (what the node has) and the new one on a "+ " line (what the config says),
// as jd renders a change. Objects are compared key by key in key order, lists index by
// index; an entry or key on one side only is one change with its whole value. (jd also
// aligns lists by their longest common subsequence and prints context lines; an entry
// inserted before others is reported here as changes of the entries after it.)
//
// These are the changes MachineConfiguration spec.irreconcilableValidationOverrides
// lets through: only nodes provisioned from now on get them. To fit the schema (at most
// 32 entries, field paths of at most 70 characters, diffs of at most 4096 bytes), a
// path too long is reported at its list entry (spec.config.storage.disks[0]) with the
// entry's whole diff; more than 32 changes are reported per entry, then per section,
// then cut; a diff over 4096 bytes is cut.
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
	perLevel := func(leaves bool) ([][]mcfgv1.IrreconcilableChangeDiff, int) {
		var per [][]mcfgv1.IrreconcilableChangeDiff
		total := 0
		for _, s := range sections {
			ds := entryDiffs("spec.config.storage."+s.name, reflect.ValueOf(s.old), reflect.ValueOf(s.new), leaves)
			per = append(per, ds)
			total += len(ds)
		}
		return per, total
	}
	per, total := perLevel(true)
	if total > MaxIrreconcilableChanges {
		per, total = perLevel(false)
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

// entryDiffs compares two lists entry by entry, by index as jd does; with leaves, each
// entry field by field (jsonDiffs).
func entryDiffs(field string, old, new reflect.Value, leaves bool) []mcfgv1.IrreconcilableChangeDiff {
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
		if !leaves || o == nil || n == nil {
			out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: path, Diff: render(o, n)})
			continue
		}
		changes := jsonDiffs(path, generic(o), generic(n), nil)
		if slices.ContainsFunc(changes, func(c jsonChange) bool { return len(c.path) > maxIrreconcilablePath }) {
			out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: path, Diff: render(o, n)})
			continue
		}
		for _, c := range changes {
			out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: c.path, Diff: renderJSON(c)})
		}
	}
	return out
}

// jsonChange is one changed value at path; a side without the value is absent.
type jsonChange struct {
	path           string
	old, new       any
	hasOld, hasNew bool
}

// jsonDiffs appends the changes between two decoded JSON values at path: objects key by
// key (keys sorted), lists index by index, anything else as a whole.
func jsonDiffs(path string, old, new any, out []jsonChange) []jsonChange {
	switch o := old.(type) {
	case map[string]any:
		if n, ok := new.(map[string]any); ok {
			union := maps.Clone(o)
			maps.Copy(union, n)
			keys := slices.Sorted(maps.Keys(union))
			for _, k := range keys {
				ov, inOld := o[k]
				nv, inNew := n[k]
				switch {
				case inOld && inNew:
					out = jsonDiffs(path+"."+k, ov, nv, out)
				default:
					out = append(out, jsonChange{path: path + "." + k, old: ov, new: nv, hasOld: inOld, hasNew: inNew})
				}
			}
			return out
		}
	case []any:
		if n, ok := new.([]any); ok {
			for i := range max(len(o), len(n)) {
				p := fmt.Sprintf("%s[%d]", path, i)
				switch {
				case i < len(o) && i < len(n):
					out = jsonDiffs(p, o[i], n[i], out)
				case i < len(o):
					out = append(out, jsonChange{path: p, old: o[i], hasOld: true})
				default:
					out = append(out, jsonChange{path: p, new: n[i], hasNew: true})
				}
			}
			return out
		}
	}
	if reflect.DeepEqual(old, new) {
		return out
	}
	return append(out, jsonChange{path: path, old: old, new: new, hasOld: true, hasNew: true})
}

// generic is v as encoding/json decodes its encoding: maps, lists and scalars.
func generic(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func renderJSON(c jsonChange) string {
	var s string
	if c.hasOld {
		s += "- " + compact(c.old) + "\n"
	}
	if c.hasNew {
		s += "+ " + compact(c.new) + "\n"
	}
	if len(s) > maxIrreconcilableDiff {
		const cut = " ...(cut)\n"
		s = s[:maxIrreconcilableDiff-len(cut)] + cut
	}
	return s
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
