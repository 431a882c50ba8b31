package configdiff_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ignconfig"
)

// ign parses a raw Ignition config for a test, failing the test when Ignition refuses it.
func ign(t testing.TB, raw string) types.Config {
	t.Helper()
	cfg, rpt, err := ignconfig.Parse([]byte(raw))
	if err != nil {
		t.Fatalf("test config does not parse: %v\n%s\n%s", err, rpt, raw)
	}
	return cfg
}

// cfg is a Config with the given Ignition body (the part after the version), e.g.
// `"storage":{"files":[...]}`.
func cfg(t testing.TB, body string) configdiff.Config {
	t.Helper()
	raw := `{"ignition":{"version":"3.5.0"}`
	if body != "" {
		raw += "," + body
	}
	return configdiff.Config{Ignition: ign(t, raw+"}")}
}

func ptr[T any](v T) *T { return &v }

func TestComputeNoChanges(t *testing.T) {
	body := `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}]},
		"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]"}]},
		"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA k1"]}]}`
	old := cfg(t, body)
	old.Name, old.OSImageURL, old.KernelArguments = "rendered-worker-1", "quay.io/os@sha256:1", []string{"a=1"}

	// The same content under another name and an older Ignition version is no change:
	// both are compared as spec 3.5.
	newCfg := configdiff.Config{
		Name:            "rendered-worker-2",
		Ignition:        ign(t, `{"ignition":{"version":"3.2.0"},`+body+`}`),
		OSImageURL:      "quay.io/os@sha256:1",
		KernelArguments: []string{"a=1"},
		KernelType:      "default", // the same kernel as ""
	}
	c := configdiff.Compute(old, newCfg)
	if !c.Empty() {
		t.Fatalf("Compute found changes between equal configs: %+v", c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "{}" {
		t.Errorf("empty Changes marshal to %s, want {}", b)
	}
	if rs := configdiff.Reconcilable(old, newCfg, noOverrides); rs != nil {
		t.Errorf("equal configs are not reconcilable: %v", rs)
	}
}

func TestComputeFiles(t *testing.T) {
	old := cfg(t, `"storage":{"files":[
		{"path":"/etc/keep","contents":{"source":"data:,same"}},
		{"path":"/etc/content","contents":{"source":"data:,old"}},
		{"path":"/etc/mode","contents":{"source":"data:,x"},"mode":420},
		{"path":"/etc/owner","contents":{"source":"data:,x"}},
		{"path":"/etc/gone","contents":{"source":"data:,x"}},
		{"path":"/etc/b-gone"}]}`)
	newCfg := cfg(t, `"storage":{"files":[
		{"path":"/etc/new","contents":{"source":"data:,n"}},
		{"path":"/etc/a-new"},
		{"path":"/etc/owner","contents":{"source":"data:,x"},"user":{"name":"core"}},
		{"path":"/etc/mode","contents":{"source":"data:,x"},"mode":384},
		{"path":"/etc/content","contents":{"source":"data:,new"}},
		{"path":"/etc/keep","contents":{"source":"data:,same"},"append":[]}]}`)
	got := configdiff.Compute(old, newCfg)
	want := configdiff.EntryChanges{
		Added:   []string{"/etc/a-new", "/etc/new"},
		Changed: []string{"/etc/content", "/etc/mode", "/etc/owner"},
		Removed: []string{"/etc/b-gone", "/etc/gone"},
	}
	if !reflect.DeepEqual(got.Files, want) {
		t.Errorf("Files = %+v\nwant   %+v", got.Files, want)
	}
	if all := got.Files.All(); !reflect.DeepEqual(all, []string{"/etc/a-new", "/etc/b-gone", "/etc/content", "/etc/gone", "/etc/mode", "/etc/new", "/etc/owner"}) {
		t.Errorf("Files.All() = %v, want every path sorted", all)
	}
	if len(got.Units) != 0 || got.CoreUser != nil {
		t.Errorf("file changes reported other changes: %+v", got)
	}
}

func TestComputeUnits(t *testing.T) {
	old := cfg(t, `"systemd":{"units":[
		{"name":"same.service","contents":"[Unit]","dropins":[{"name":"a.conf","contents":"a"},{"name":"b.conf","contents":"b"}]},
		{"name":"contents.service","contents":"[Unit]\nDescription=old"},
		{"name":"enable.service","contents":"[Unit]"},
		{"name":"mask.service","mask":false},
		{"name":"dropins.service","dropins":[{"name":"keep.conf","contents":"k"},{"name":"change.conf","contents":"old"},{"name":"drop.conf","contents":"d"}]},
		{"name":"removed.service","contents":"[Unit]","enabled":true,"dropins":[{"name":"x.conf","contents":"x"}]}]}`)
	newCfg := cfg(t, `"systemd":{"units":[
		{"name":"same.service","contents":"[Unit]","dropins":[{"name":"b.conf","contents":"b"},{"name":"a.conf","contents":"a"}]},
		{"name":"contents.service","contents":"[Unit]\nDescription=new"},
		{"name":"enable.service","contents":"[Unit]","enabled":true},
		{"name":"mask.service","mask":true},
		{"name":"dropins.service","dropins":[{"name":"keep.conf","contents":"k"},{"name":"change.conf","contents":"new"},{"name":"add.conf","contents":"a"}]},
		{"name":"added.service","contents":"[Unit]","enabled":false,"mask":true,"dropins":[{"name":"y.conf","contents":"y"}]}]}`)
	got := configdiff.Compute(old, newCfg).Units
	want := []configdiff.UnitChange{
		{Name: "added.service", Kind: configdiff.Added, Contents: true,
			Enabled: &configdiff.FlagChange{New: ptr(false)}, Mask: &configdiff.FlagChange{New: ptr(true)},
			Dropins: configdiff.EntryChanges{Added: []string{"y.conf"}}},
		{Name: "contents.service", Kind: configdiff.Changed, Contents: true},
		{Name: "dropins.service", Kind: configdiff.Changed,
			Dropins: configdiff.EntryChanges{Added: []string{"add.conf"}, Changed: []string{"change.conf"}, Removed: []string{"drop.conf"}}},
		{Name: "enable.service", Kind: configdiff.Changed, Enabled: &configdiff.FlagChange{New: ptr(true)}},
		{Name: "mask.service", Kind: configdiff.Changed, Mask: &configdiff.FlagChange{Old: ptr(false), New: ptr(true)}},
		{Name: "removed.service", Kind: configdiff.Removed, Contents: true,
			Enabled: &configdiff.FlagChange{Old: ptr(true)},
			Dropins: configdiff.EntryChanges{Removed: []string{"x.conf"}}},
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", "  ")
		wj, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("Units =\n%s\nwant\n%s", gj, wj)
	}
}

func TestComputeCoreUser(t *testing.T) {
	users := func(us string) configdiff.Config { return cfg(t, `"passwd":{"users":[`+us+`]}`) }
	tests := []struct {
		name     string
		old, new configdiff.Config
		want     *configdiff.CoreUserChange
	}{
		{
			name: "key added and removed",
			old:  users(`{"name":"core","sshAuthorizedKeys":["k1","k2"]}`),
			new:  users(`{"name":"core","sshAuthorizedKeys":["k2","k3"]}`),
			want: &configdiff.CoreUserChange{SSHKeys: &configdiff.ListChange{
				Old: []string{"k1", "k2"}, New: []string{"k2", "k3"}, Added: []string{"k3"}, Removed: []string{"k1"}}},
		},
		{
			name: "order only",
			old:  users(`{"name":"core","sshAuthorizedKeys":["k1","k2"]}`),
			new:  users(`{"name":"core","sshAuthorizedKeys":["k2","k1"]}`),
			want: &configdiff.CoreUserChange{SSHKeys: &configdiff.ListChange{Old: []string{"k1", "k2"}, New: []string{"k2", "k1"}}},
		},
		{
			name: "core user appears",
			old:  cfg(t, ""),
			new:  users(`{"name":"core","sshAuthorizedKeys":["k1"]}`),
			want: &configdiff.CoreUserChange{SSHKeys: &configdiff.ListChange{Old: []string{}, New: []string{"k1"}, Added: []string{"k1"}}},
		},
		{
			name: "password hash only",
			old:  users(`{"name":"core","sshAuthorizedKeys":["k1"],"passwordHash":"$6$a"}`),
			new:  users(`{"name":"core","sshAuthorizedKeys":["k1"],"passwordHash":"$6$b"}`),
			want: &configdiff.CoreUserChange{PasswordHash: true},
		},
		{
			name: "another user changes, core does not",
			old:  users(`{"name":"core","sshAuthorizedKeys":["k1"]},{"name":"bob"}`),
			new:  users(`{"name":"core","sshAuthorizedKeys":["k1"]},{"name":"bob","uid":1001}`),
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configdiff.Compute(tt.old, tt.new).CoreUser
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CoreUser = %+v, want %+v", got, tt.want)
			}
		})
	}
	// The hash itself never reaches Changes.
	c := configdiff.Compute(users(`{"name":"core","passwordHash":"$6$secret-old"}`), users(`{"name":"core","passwordHash":"$6$secret-new"}`))
	if b, _ := json.Marshal(c); strings.Contains(string(b), "secret") {
		t.Errorf("Changes carry the password hash: %s", b)
	}
}

func TestComputeSpecFields(t *testing.T) {
	base := func() configdiff.Config { return cfg(t, "") }
	with := func(f func(*configdiff.Config)) configdiff.Config { c := base(); f(&c); return c }
	tests := []struct {
		name     string
		old, new configdiff.Config
		want     configdiff.Changes
	}{
		{
			name: "kernel arguments added, removed and split alike",
			old:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"a=1 nosmt", "b"} }),
			new:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"a=1", "b", "c=\"x y\""} }),
			want: configdiff.Changes{KernelArguments: &configdiff.ListChange{
				Old: []string{"a=1", "nosmt", "b"}, New: []string{"a=1", "b", `c="x y"`},
				Added: []string{`c="x y"`}, Removed: []string{"nosmt"}}},
		},
		{
			name: "kernel arguments split differently are the same command line",
			old:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"a=1 b=2"} }),
			new:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"a=1", "b=2"} }),
		},
		{
			name: "kernel arguments reordered",
			old:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"console=tty0", "console=ttyS0"} }),
			new:  with(func(c *configdiff.Config) { c.KernelArguments = []string{"console=ttyS0", "console=tty0"} }),
			want: configdiff.Changes{KernelArguments: &configdiff.ListChange{
				Old: []string{"console=tty0", "console=ttyS0"}, New: []string{"console=ttyS0", "console=tty0"}}},
		},
		{
			name: "os image",
			old:  with(func(c *configdiff.Config) { c.OSImageURL = "quay.io/os@sha256:1" }),
			new:  with(func(c *configdiff.Config) { c.OSImageURL = "quay.io/os@sha256:2" }),
			want: configdiff.Changes{OSImageURL: &configdiff.StringChange{Old: "quay.io/os@sha256:1", New: "quay.io/os@sha256:2"}},
		},
		{
			name: "kernel type, canonical values",
			old:  with(func(c *configdiff.Config) { c.KernelType = "" }),
			new:  with(func(c *configdiff.Config) { c.KernelType = "realtime" }),
			want: configdiff.Changes{KernelType: &configdiff.StringChange{Old: "default", New: "realtime"}},
		},
		{
			name: "unknown kernel type is the default kernel",
			old:  with(func(c *configdiff.Config) { c.KernelType = "default" }),
			new:  with(func(c *configdiff.Config) { c.KernelType = "bogus" }),
		},
		{
			name: "extensions",
			old:  with(func(c *configdiff.Config) { c.Extensions = []string{"usbguard", "wasm"} }),
			new:  with(func(c *configdiff.Config) { c.Extensions = []string{"wasm", "kerberos"} }),
			want: configdiff.Changes{Extensions: &configdiff.ListChange{
				Old: []string{"usbguard", "wasm"}, New: []string{"wasm", "kerberos"}, Added: []string{"kerberos"}, Removed: []string{"usbguard"}}},
		},
		{
			name: "extensions listed twice are one package",
			old:  base(),
			new:  with(func(c *configdiff.Config) { c.Extensions = []string{"wasm", "kerberos", "wasm"} }),
			want: configdiff.Changes{Extensions: &configdiff.ListChange{
				Old: []string{}, New: []string{"wasm", "kerberos", "wasm"}, Added: []string{"kerberos", "wasm"}}},
		},
		{
			name: "extensions reordered are the same packages",
			old:  with(func(c *configdiff.Config) { c.Extensions = []string{"usbguard", "wasm"} }),
			new:  with(func(c *configdiff.Config) { c.Extensions = []string{"wasm", "usbguard", "wasm"} }),
		},
		{
			name: "fips",
			old:  base(),
			new:  with(func(c *configdiff.Config) { c.FIPS = true }),
			want: configdiff.Changes{FIPS: &configdiff.BoolChange{Old: false, New: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configdiff.Compute(tt.old, tt.new)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compute =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestSplitKernelArguments(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{"  a=1\tb  "}, []string{"a=1", "b"}},
		{[]string{`dyndbg="file x.c +p" quiet`}, []string{`dyndbg="file x.c +p"`, "quiet"}},
		{[]string{`a="unterminated b`}, []string{`a="unterminated b`}},
		{[]string{"a", "b c"}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		if got := configdiff.SplitKernelArguments(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitKernelArguments(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFromMachineConfig(t *testing.T) {
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1"},
		Spec: mcfgv1.MachineConfigSpec{
			OSImageURL:      "quay.io/os@sha256:1",
			KernelArguments: []string{"nosmt"},
			KernelType:      "realtime",
			Extensions:      []string{"usbguard"},
			FIPS:            true,
			Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a"}]}}`)},
		},
	}
	c, err := configdiff.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "rendered-worker-1" || c.OSImageURL != "quay.io/os@sha256:1" || !c.FIPS || c.KernelType != "realtime" ||
		!reflect.DeepEqual(c.KernelArguments, []string{"nosmt"}) || !reflect.DeepEqual(c.Extensions, []string{"usbguard"}) ||
		len(c.Ignition.Storage.Files) != 1 || c.Ignition.Ignition.Version != "3.5.0" {
		t.Errorf("FromMachineConfig = %+v", c)
	}

	mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"relative"}]}}`)
	_, err = configdiff.FromMachineConfig(mc)
	if err == nil || !strings.Contains(err.Error(), "rendered-worker-1") {
		t.Errorf("FromMachineConfig of an invalid config: error %v, want one naming the MachineConfig", err)
	}
}
