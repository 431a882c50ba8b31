package render

import (
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5"
	"pgregory.net/rapid"
)

// TestFolderIsMerge checks folder against the definition: repeated v3_5.Merge. The
// generated configs draw paths and unit names from small sets, so that sequences make
// a path a file, then a link, then a file again, merge a unit's drop-ins, and so on.
func TestFolderIsMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		configs := rapid.SliceOfN(genConfig(), 1, 6).Draw(t, "configs")
		want := configs[0]
		f := newFolder(configs[0])
		for _, c := range configs[1:] {
			want = v3_5.Merge(want, c)
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
