package render

import (
	ignmerge "github.com/coreos/ignition/v2/config/merge"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// folder merges a sequence of Ignition configs with exactly the result of
//
//	out := base
//	for _, c := range rest {
//		every file of c without compression gets compression ""
//		out = v3_5.Merge(out, c)
//		every file of out with compression "" gets none
//	}
//
// which is what MCO does (helpers.go MergeMachineConfigs), in time linear in the total size of the configs instead of
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
//
// The compression steps are MCO's fix for coreos/butane#332: Ignition merges a file's
// source and compression as separate fields, so a later config that replaces a gzipped
// file with plain contents would keep compression: gzip on them, and the node would be
// told to gunzip plain text. The empty compression of the later file wins the merge and
// is then dropped.
type folder struct {
	skeleton types.Config
	files    keyed[types.File]
	links    keyed[types.Link]
	dirs     keyed[types.Directory]
	units    keyed[types.Unit]
	// merged says a later config has been merged in: the first merge also drops an
	// empty compression that the base config itself gave a file.
	merged bool
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
	if !base && !f.merged {
		f.merged = true
		for i := range f.files.items {
			clearEmptyCompression(&f.files.items[i])
		}
	}
	for _, it := range c.Storage.Files {
		if !base && it.Contents.Compression == nil {
			it.Contents.Compression = &noCompression
		}
		if !f.files.mergeIn(it.Path, it) {
			f.dirs.drop(it.Path)
			f.links.drop(it.Path)
			f.files.add(it.Path, it)
		}
		if !base {
			clearEmptyCompression(f.files.get(it.Path))
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

// noCompression is the compression MCO gives a later config's file that has none, so
// that it replaces an earlier file's. Only its address is stored, never written through.
var noCompression = ""

// clearEmptyCompression drops an empty compression, as MCO does after each merge.
func clearEmptyCompression(file *types.File) {
	if c := file.Contents.Compression; c != nil && *c == "" {
		file.Contents.Compression = nil
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

// get returns the item with key k, which the list must have.
func (l *keyed[T]) get(k string) *T { return &l.items[l.at[k]] }

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
