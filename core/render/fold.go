package render

import (
	ignmerge "github.com/coreos/ignition/v2/config/merge"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// folder merges a sequence of Ignition configs with exactly the result of
//
//	out := base
//	for _, c := range rest { out = v3_5.Merge(out, c) }
//
// which is what MCO does, in time linear in the total size of the configs instead of
// quadratic. v3_5.Merge walks (and transcribes) every item of the accumulated config
// on every step; a pool of 200 MachineConfigs with 5,000 files took seconds that way.
//
// The large lists (storage files, links and directories, and systemd units) are kept
// indexed by key, and each step replays what Ignition's merge does to them
// (config/merge/merge.go mergeStruct, slice case):
//
//   - a child item whose key the same list already has is merged into that item, in
//     place, by Ignition's own struct merge;
//   - otherwise an item with that key in another list of the same group is dropped
//     (files, links and directories form one group, Storage.MergedKeys), and the child
//     item is appended;
//   - everything else keeps its place.
//
// All other fields stay in a skeleton config merged by v3_5.Merge itself; they are
// small, and no list there shares a key group with the indexed ones. TestFolderIsMerge
// checks the equivalence on random sequences that collide on every rule.
type folder struct {
	skeleton types.Config
	files    keyed[types.File]
	links    keyed[types.Link]
	dirs     keyed[types.Directory]
	units    keyed[types.Unit]
}

func newFolder(base types.Config) *folder {
	f := &folder{}
	f.add(base, true)
	return f
}

// merge merges child into the accumulated config.
func (f *folder) merge(child types.Config) { f.add(child, false) }

func (f *folder) add(c types.Config, base bool) {
	for _, d := range c.Storage.Directories {
		if !f.dirs.mergeIn(d.Path, d) {
			f.files.drop(d.Path)
			f.links.drop(d.Path)
			f.dirs.add(d.Path, d)
		}
	}
	for _, it := range c.Storage.Files {
		if !f.files.mergeIn(it.Path, it) {
			f.dirs.drop(it.Path)
			f.links.drop(it.Path)
			f.files.add(it.Path, it)
		}
	}
	for _, l := range c.Storage.Links {
		if !f.links.mergeIn(l.Path, l) {
			f.dirs.drop(l.Path)
			f.files.drop(l.Path)
			f.links.add(l.Path, l)
		}
	}
	for _, u := range c.Systemd.Units {
		if !f.units.mergeIn(u.Name, u) {
			f.units.add(u.Name, u)
		}
	}
	c.Storage.Directories, c.Storage.Files, c.Storage.Links, c.Systemd.Units = nil, nil, nil, nil
	if base {
		f.skeleton = c
	} else {
		f.skeleton = v3_5.Merge(f.skeleton, c)
	}
}

// config returns the merged config.
func (f *folder) config() types.Config {
	out := f.skeleton
	out.Storage.Directories = f.dirs.live()
	out.Storage.Files = f.files.live()
	out.Storage.Links = f.links.live()
	out.Systemd.Units = f.units.live()
	return out
}

// keyed is a list of Ignition items with an index by key. Dropped items leave a hole
// until live compacts the list, so that indices stay valid.
type keyed[T any] struct {
	items []T
	dead  []bool
	at    map[string]int
}

// mergeIn merges child into the item with key k and reports whether there was one.
func (l *keyed[T]) mergeIn(k string, child T) bool {
	i, ok := l.at[k]
	if ok {
		merged, _ := ignmerge.MergeStructTranscribe(l.items[i], child)
		l.items[i] = merged.(T)
	}
	return ok
}

func (l *keyed[T]) add(k string, item T) {
	if l.at == nil {
		l.at = map[string]int{}
	}
	l.at[k] = len(l.items)
	l.items = append(l.items, item)
	l.dead = append(l.dead, false)
}

func (l *keyed[T]) drop(k string) {
	if i, ok := l.at[k]; ok {
		l.dead[i] = true
		delete(l.at, k)
	}
}

// live returns the items not dropped, in order; nil when there are none. (Ignition's
// merge may leave an empty non-nil list instead; no encoding or check tells them apart.)
func (l *keyed[T]) live() []T {
	if len(l.at) == 0 {
		return nil
	}
	out := make([]T, 0, len(l.at))
	for i, it := range l.items {
		if !l.dead[i] {
			out = append(out, it)
		}
	}
	return out
}
