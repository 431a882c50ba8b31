package configdiff

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/ignconfig"
)

func strp(s string) *string { return &s }

func boolp(b bool) *bool { return &b }

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
			"spec.config.storage.disks[0].partitions[0].sizeMiB=- 1024\n+ 2048\n",
		}},
		{"partition added", Layout{Disks: []types.Disk{disk("/dev/vda", 1024, 512)}}, []string{
			`spec.config.storage.disks[0].partitions[1]=+ {"label":"p1","sizeMiB":512}` + "\n",
		}},
		{"field set", Layout{Disks: []types.Disk{{Device: "/dev/vda", WipeTable: boolp(true), Partitions: disk("", 1024).Partitions}}}, []string{
			"spec.config.storage.disks[0].wipeTable=+ true\n",
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

// TestIrreconcilableChangesAsMCO is MCO's TestGenerateReport
// (pkg/daemon/irreconcilable_diff_reporter_test.go): one entry per changed field,
// fieldPath as MCO writes it, the diff holding the new value; identical layouts report
// nothing.
func TestIrreconcilableChangesAsMCO(t *testing.T) {
	layout := func(t *testing.T, raw string) Layout {
		t.Helper()
		cfg, _, err := ignconfig.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return LayoutOf(Config{Ignition: cfg})
	}
	for _, tc := range []struct {
		name         string
		base, target string
		want         [][2]string // fieldPath, a part of the diff
	}{{
		name:   "disk device change",
		base:   `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}]}}`,
		target: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sdb","wipeTable":true}]}}`,
		want:   [][2]string{{"spec.config.storage.disks[0].device", `"/dev/sdb"`}},
	}, {
		name:   "no differences - identical configs",
		base:   `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}]}}`,
		target: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}]}}`,
	}, {
		name: "multiple changes",
		base: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}],
			"filesystems":[{"device":"/dev/sda1","format":"ext4"}]}}`,
		target: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sdb","wipeTable":false}],
			"filesystems":[{"device":"/dev/sdb1","format":"xfs"}]}}`,
		want: [][2]string{
			{"spec.config.storage.disks[0].device", `"/dev/sdb"`},
			{"spec.config.storage.disks[0].wipeTable", "false"},
			{"spec.config.storage.filesystems[0].device", `"/dev/sdb1"`},
			{"spec.config.storage.filesystems[0].format", `"xfs"`},
		},
	}, {
		name: "systemd and files changes - should be ignored",
		base: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}],
			"files":[{"path":"/etc/example.conf","contents":{"source":"data:,original"}}]},
			"systemd":{"units":[{"name":"example.service","enabled":true,"contents":"[Unit]\nDescription=Example\n"}]}}`,
		target: `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sda","wipeTable":true}],
			"files":[{"path":"/etc/example.conf","contents":{"source":"data:,modified"}},{"path":"/etc/newfile.conf","contents":{"source":"data:,new"}}]},
			"systemd":{"units":[{"name":"example.service","enabled":false,"contents":"[Unit]\nDescription=Modified Example\n"},
			{"name":"newservice.service","enabled":true,"contents":"[Unit]\nDescription=New Service\n"}]}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := IrreconcilableChanges(layout(t, tc.base), layout(t, tc.target))
			if len(got) != len(tc.want) {
				t.Fatalf("%d changes %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].FieldPath != w[0] || !strings.Contains(got[i].Diff, w[1]) {
					t.Errorf("change %d = %s %q, want %s with %s", i, got[i].FieldPath, got[i].Diff, w[0], w[1])
				}
			}
		})
	}
}
