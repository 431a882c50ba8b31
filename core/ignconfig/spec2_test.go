package ignconfig

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	ign2types "github.com/coreos/ignition/config/v2_2/types"
	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// TestParseSpec2ConvertsAsMCO is MCO's TestParseAndConvert
// (pkg/controller/common/helpers_test.go): a spec 2.2 config whose core user has the
// SSH keys 5678, 5678 (on purpose) and abc parses to the 3.5 config with keys 5678 and
// abc; the same config written as 3.0 to 3.5 parses to it too; version 21.0.0 fails.
func TestParseSpec2ConvertsAsMCO(t *testing.T) {
	want := Empty()
	want.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"5678", "abc"}}}

	spec2 := `{"ignition":{"version":"2.2.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["5678","5678","abc"]}]}}`
	got, _, err := Parse([]byte(spec2))
	if err != nil {
		t.Fatalf("Parse(spec 2.2) = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(spec 2.2) =\n%+v\nwant\n%+v", got, want)
	}
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		raw := `{"ignition":{"version":"` + v + `"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["5678","abc"]}]}}`
		got, _, err := Parse([]byte(raw))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(spec %s) = %+v, %v; want %+v", v, got, err, want)
		}
	}
	if _, _, err := Parse([]byte(`{"ignition":{"version":"21.0.0"}}`)); err == nil {
		t.Error("Parse(version 21.0.0) succeeded")
	}
	for _, v := range []string{"2.0.0", "2.1.0"} {
		if _, _, err := Parse([]byte(`{"ignition":{"version":"` + v + `"}}`)); err != nil {
			t.Errorf("Parse(spec %s) = %v; MCO's spec 2.2 parser reads it", v, err)
		}
	}
	// MCO's spec 2 parser is 2.2's: later spec 2 versions are unknown to it.
	if _, _, err := Parse([]byte(`{"ignition":{"version":"2.3.0"}}`)); err == nil {
		t.Error("Parse(spec 2.3.0) succeeded; MCO refuses it")
	}
}

// TestRemoveDuplicatesAsMCO is MCO's TestRemoveIgnDuplicateFilesAndUnits: two entries
// for /etc/testfileconfig keep the later one; three units named testUnit become the
// last one with its drop-in "two" and the drop-in "one" of the middle unit (the latest
// "one"), in that order.
func TestRemoveDuplicatesAsMCO(t *testing.T) {
	mode := 420
	file := func(data string) ign2types.File {
		return ign2types.File{
			Node:          ign2types.Node{Filesystem: "root", Path: "/etc/testfileconfig"},
			FileEmbedded1: ign2types.FileEmbedded1{Contents: ign2types.FileContents{Source: data}, Mode: &mode},
		}
	}
	in := ign2types.Config{}
	in.Storage.Files = []ign2types.File{file("data:,old"), file("data:,new")}
	in.Systemd.Units = []ign2types.Unit{
		{Name: "testUnit", Contents: "data:,old", Dropins: []ign2types.SystemdDropin{{Name: "one", Contents: "data:,old"}}},
		{Name: "testUnit", Dropins: []ign2types.SystemdDropin{{Name: "one", Contents: "data:,new"}}},
		{Name: "testUnit", Contents: "data:,new", Dropins: []ign2types.SystemdDropin{{Name: "two", Contents: "data:,new"}}},
	}
	got, err := removeDuplicates(in)
	if err != nil {
		t.Fatal(err)
	}
	want := ign2types.Config{}
	want.Storage.Files = []ign2types.File{file("data:,new")}
	want.Systemd.Units = []ign2types.Unit{{Name: "testUnit", Contents: "data:,new", Dropins: []ign2types.SystemdDropin{
		{Name: "two", Contents: "data:,new"}, {Name: "one", Contents: "data:,new"},
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("removeDuplicates =\n%+v\nwant\n%+v", got, want)
	}

	in.Passwd.Users = []ign2types.PasswdUser{{Name: "core"}, {Name: "admin"}}
	if _, err := removeDuplicates(in); err == nil || !strings.Contains(err.Error(), "unexpected user with name: admin. Only core user is supported") {
		t.Errorf("removeDuplicates with user admin = %v, want MCO's refusal", err)
	}
}

// TestParseSpec2MachineConfig converts a whole spec 2.2 MachineConfig as old clusters
// carry it: files on the root filesystem, a unit with a drop-in, duplicates merged.
func TestParseSpec2MachineConfig(t *testing.T) {
	raw := `{"ignition":{"version":"2.2.0"},
	  "storage":{"files":[
	    {"filesystem":"root","path":"/etc/motd","mode":420,"contents":{"source":"data:,old"}},
	    {"filesystem":"root","path":"/etc/motd","mode":420,"contents":{"source":"data:,new"}}]},
	  "systemd":{"units":[{"name":"hello.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n",
	    "dropins":[{"name":"10-env.conf","contents":"[Service]\nEnvironment=A=1\n"}]}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA a"]},{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA a","ssh-ed25519 BBBB b"]}]}}`
	got, _, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got)
	if got.Ignition.Version != Version || len(got.Storage.Files) != 1 || *got.Storage.Files[0].Contents.Source != "data:,new" ||
		len(got.Systemd.Units) != 1 || len(got.Systemd.Units[0].Dropins) != 1 ||
		!reflect.DeepEqual(got.Passwd.Users[0].SSHAuthorizedKeys, []types.SSHAuthorizedKey{"ssh-ed25519 AAAA a", "ssh-ed25519 BBBB b"}) {
		t.Errorf("converted config: %s", js)
	}

	// A filesystem other than root has no place in spec 3: refused, wrapping ErrSpec2.
	other := `{"ignition":{"version":"2.2.0"},"storage":{"filesystems":[{"name":"data","mount":{"device":"/dev/vdb","format":"xfs"}}],
	  "files":[{"filesystem":"data","path":"/x","contents":{"source":"data:,x"}}]}}`
	if _, _, err := Parse([]byte(other)); !errors.Is(err, ErrSpec2) {
		t.Errorf("Parse(file on filesystem data) = %v, want an ErrSpec2", err)
	}
}
