package configdiff

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

func strp(s string) *string { return &s }

func TestIrreconcilableChanges(t *testing.T) {
	disk := func(dev string, sizes ...int) types.Disk {
		d := types.Disk{Device: dev}
		for i, s := range sizes {
			d.Partitions = append(d.Partitions, types.Partition{Label: strp(fmt.Sprintf("p%d", i)), SizeMiB: &s})
		}
		return d
	}
	base := Layout{Disks: []types.Disk{disk("/dev/vda", 1024)}}
	for _, tc := range []struct {
		name   string
		target Layout
		want   []string // fieldPath=diff
	}{
		{"same", base, nil},
		{"empty list is no list", Layout{Disks: []types.Disk{disk("/dev/vda", 1024)}, Raid: []types.Raid{}}, nil},
		{"partition grows", Layout{Disks: []types.Disk{disk("/dev/vda", 2048)}}, []string{
			`spec.config.storage.disks[0]=- {"device":"/dev/vda","partitions":[{"label":"p0","sizeMiB":1024}]}` + "\n" +
				`+ {"device":"/dev/vda","partitions":[{"label":"p0","sizeMiB":2048}]}` + "\n",
		}},
		{"disk and filesystem added", Layout{
			Disks:       []types.Disk{disk("/dev/vda", 1024), disk("/dev/vdb")},
			Filesystems: []types.Filesystem{{Device: "/dev/vdb", Format: strp("xfs"), Path: strp("/var/data")}},
		}, []string{
			`spec.config.storage.disks[1]=+ {"device":"/dev/vdb"}` + "\n",
			`spec.config.storage.filesystems[0]=+ {"device":"/dev/vdb","format":"xfs","path":"/var/data"}` + "\n",
		}},
		{"disk removed", Layout{}, []string{
			`spec.config.storage.disks[0]=- {"device":"/dev/vda","partitions":[{"label":"p0","sizeMiB":1024}]}` + "\n",
		}},
	} {
		var got []string
		for _, d := range IrreconcilableChanges(base, tc.target) {
			got = append(got, d.FieldPath+"="+d.Diff)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// The schema's rules: at most 32 entries, unique field paths of at most 70 characters
// made of letters, digits, dots and brackets and starting with spec., diffs of 1 to
// 4096 characters.
func TestIrreconcilableChangesFitTheSchema(t *testing.T) {
	var target Layout
	big := strings.Repeat("x", 5000)
	for i := range 40 {
		target.Disks = append(target.Disks, types.Disk{Device: fmt.Sprintf("/dev/disk%d", i)})
		target.Raid = append(target.Raid, types.Raid{Name: fmt.Sprintf("md%d", i), Level: strp(big)})
	}
	target.Luks = []types.Luks{{Name: "root"}}
	got := IrreconcilableChanges(Layout{}, target)
	if len(got) > MaxIrreconcilableChanges || len(got) == 0 {
		t.Fatalf("%d entries", len(got))
	}
	valid := regexp.MustCompile(`^spec\.[\da-zA-Z.\[\]]+$`)
	seen := map[string]bool{}
	for _, d := range got {
		if !valid.MatchString(d.FieldPath) || len(d.FieldPath) > 70 || seen[d.FieldPath] {
			t.Errorf("fieldPath %q breaks the schema (or repeats)", d.FieldPath)
		}
		seen[d.FieldPath] = true
		if len(d.Diff) == 0 || len(d.Diff) > 4096 {
			t.Errorf("%s: diff of %d bytes", d.FieldPath, len(d.Diff))
		}
	}
	if !seen["spec.config.storage.disks"] || !seen["spec.config.storage.luks[0]"] {
		t.Fatalf("sections folded wrongly: %v", seen)
	}
}
