package render

import (
	"slices"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"pgregory.net/rapid"
)

// TestFolderIsMerge checks folder against the definition: MCO's loop of v3_5.Merge in
// MergeMachineConfigs, with its compression steps. The generated configs draw paths and
// unit names from small sets, so that sequences make a path a file, then a link, then a
// file again, gzip it and then not, merge a unit's drop-ins, and so on.
func TestFolderIsMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		configs := rapid.SliceOfN(genConfig(), 1, 6).Draw(t, "configs")
		want := configs[0]
		f := newFolder(configs[0])
		for _, c := range configs[1:] {
			want = mcoMergeStep(want, c)
			f.merge(c)
		}
		wantJSON, err := marshalConfig(want)
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, err := marshalConfig(f.config())
		if err != nil {
			t.Fatal(err)
		}
		if string(gotJSON) != string(wantJSON) {
			t.Fatalf("folder:\n%s\nv3_5.Merge:\n%s", gotJSON, wantJSON)
		}
	})
}

// mcoMergeStep is one step of MCO's merge loop, written as MCO writes it
// (ignitionMergeSetFilesDefaultCompression, ign3.Merge,
// ignitionMergeUnsetFilesDefaultCompression), on copies of the files lists.
func mcoMergeStep(out, c types.Config) types.Config {
	empty := ""
	c.Storage.Files = slices.Clone(c.Storage.Files)
	for i := range c.Storage.Files {
		if c.Storage.Files[i].Contents.Compression == nil {
			c.Storage.Files[i].Contents.Compression = &empty
		}
	}
	out = v3_5.Merge(out, c)
	out.Storage.Files = slices.Clone(out.Storage.Files)
	for i := range out.Storage.Files {
		if p := out.Storage.Files[i].Contents.Compression; p != nil && *p == "" {
			out.Storage.Files[i].Contents.Compression = nil
		}
	}
	return out
}
