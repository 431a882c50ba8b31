package firstboot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-semver/semver"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
)

func TestSpecVersion(t *testing.T) {
	for _, tc := range []struct{ accept, want, err string }{
		// What Ignition sends (MCO's comments quote them).
		{accept: "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1", want: "3.5.0"},
		{accept: "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1", want: "3.2.0"},
		{accept: "application/vnd.coreos.ignition+json; version=2.4.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1", want: "2.2.0"},
		{accept: "application/vnd.coreos.ignition+json;version=3.7.0", want: "3.5.0"},
		{accept: "application/vnd.coreos.ignition+json;version=3.0.0", want: "3.0.0"},
		{accept: "", want: "2.2.0"},
		{accept: "*/*", want: "2.2.0"},
		{accept: "application/vnd.coreos.ignition+json", want: "2.2.0"},
		// q values order the ranges.
		{accept: "application/vnd.coreos.ignition+json;version=3.1.0;q=0.2, application/vnd.coreos.ignition+json;version=3.4.0", want: "3.4.0"},
		{accept: "application/vnd.coreos.ignition+json;version=2.1.0", err: "unsupported Ignition version 2.1.0"},
		{accept: "application/vnd.coreos.ignition+json;version=4.0.0", err: "unsupported Ignition version 4.0.0"},
	} {
		got, err := SpecVersion(tc.accept)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, %v; want error %q", tc.accept, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.accept, got, err, tc.want)
		}
	}
}

func pool(target, current string, updated, machines int32) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Annotations: map[string]string{}}}
	p.Spec.Configuration.Name = target
	p.Status.Configuration.Name = current
	p.Status.UpdatedMachineCount, p.Status.MachineCount = updated, machines
	return p
}

func TestChoose(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC) // a Sunday
	paused := pool("new", "old", 1, 3)
	paused.Spec.Paused = true
	closed := pool("new", "old", 1, 3)
	closed.Annotations[policy.WindowsKey] = "Sat 22:00-04:00 UTC"
	open := pool("new", "old", 1, 3)
	open.Annotations[policy.WindowsKey] = "Sun 10:00-14:00 UTC"
	held := pool("new", "old", 1, 3)
	held.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: policy.HeldCondition, Status: corev1.ConditionTrue, Message: "held by a health gate: alert X firing"}}
	invalid := pool("new", "old", 1, 3)
	invalid.Annotations[policy.OrderKey] = "Sideways"
	for _, tc := range []struct {
		name   string
		pool   *mcfgv1.MachineConfigPool
		want   string
		target bool
		why    string
	}{
		{"not rendered", pool("", "", 0, 0), "", false, "no rendered config yet"},
		{"new pool", pool("new", "", 0, 0), "new", true, ""},
		{"settled", pool("new", "new", 3, 3), "new", true, ""},
		{"rolling out", pool("new", "old", 1, 3), "new", true, ""},
		{"no node took it yet", pool("new", "old", 0, 3), "old", false, "no node of the pool has updated"},
		{"paused", paused, "old", false, "paused"},
		{"outside the window", closed, "old", false, "outside the maintenance windows"},
		{"inside the window", open, "new", true, ""},
		{"held by a gate", held, "old", false, "alert X firing"},
		{"invalid policy", invalid, "old", false, "invalid"},
	} {
		got := Choose(tc.pool, now)
		if got.Name != tc.want || got.Target != tc.target || !strings.Contains(got.Reason, tc.why) {
			t.Errorf("%s: %+v; want %s (target %t) because %q", tc.name, got, tc.want, tc.target, tc.why)
		}
	}
}

// rendered is a rendered config with a file, a unit with a drop-in, an SSH key and
// kernel arguments in its Ignition.
func rendered(t *testing.T) *mcfgv1.MachineConfig {
	mc := mctest.MachineConfig(t, "rendered-worker-abc", mctest.Config{
		Files:   []mctest.File{{Path: "/etc/a.conf", Data: "a=1\n", Mode: 0o600}, {Path: "/etc/b.conf", Data: "b=2\n"}},
		Units:   []mctest.Unit{{Name: "x.service", Contents: "[Service]\nExecStart=/bin/true\n", Enabled: mctest.Bool(true), Dropins: map[string]string{"10-a.conf": "[Service]\n"}}},
		SSHKeys: []string{"ssh-ed25519 AAAA core@example"},
	})
	mc.Spec.KernelArguments = []string{"a=1"}
	return mc
}

func TestServe(t *testing.T) {
	mc := rendered(t)
	want, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Versions[:6] {
		data, err := Serve(mc, v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got, rpt, err := v3_5.ParseCompatibleVersion(data)
		if err != nil {
			t.Fatalf("%s: %s", v, ignconfig.Describe(rpt, err))
		}
		var head struct{ Ignition struct{ Version string } }
		_ = json.Unmarshal(data, &head)
		if head.Ignition.Version != v.String() {
			t.Errorf("served spec %s, asked for %s", head.Ignition.Version, v)
		}
		if len(got.Storage.Files) != len(want.Storage.Files)+2 {
			t.Fatalf("%s: %d files, want the rendered %d and two more", v, len(got.Storage.Files), len(want.Storage.Files))
		}
		for i, f := range want.Storage.Files {
			gf := got.Storage.Files[i]
			if gf.Path != f.Path || *gf.Contents.Source != *f.Contents.Source || ignconfig.FileMode(gf) != ignconfig.FileMode(f) {
				t.Errorf("%s: file %d: %+v, want %+v", v, i, gf, f)
			}
		}
		anno := fileData(t, got, NodeAnnotationsPath)
		var annos map[string]string
		if err := json.Unmarshal(anno, &annos); err != nil || annos[nodeanno.CurrentConfigKey] != mc.Name || annos[nodeanno.DesiredConfigKey] != mc.Name || annos[nodeanno.StateKey] != nodeanno.StateDone {
			t.Errorf("%s: node annotations %s (%v)", v, anno, err)
		}
		var enc mcfgv1.MachineConfig
		if err := json.Unmarshal(fileData(t, got, EncapsulatedPath), &enc); err != nil {
			t.Fatal(err)
		}
		if enc.Name != mc.Name || strings.Join(enc.Spec.KernelArguments, " ") != "a=1" {
			t.Errorf("%s: encapsulated %s kargs %v", v, enc.Name, enc.Spec.KernelArguments)
		}
		if !strings.Contains(string(enc.Spec.Config.Raw), `"version":"`+v.String()+`"`) || strings.Contains(string(enc.Spec.Config.Raw), "a.conf") {
			t.Errorf("%s: encapsulated config %s: want an empty config of the served spec", v, enc.Spec.Config.Raw)
		}
	}
}

func fileData(t *testing.T, cfg types.Config, path string) []byte {
	t.Helper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			b, err := ignconfig.Contents(f)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no file %s", path)
	return nil
}

// Kernel arguments in the Ignition config move to the encapsulated MachineConfig for a
// spec without them, as MCO's MigrateKernelArgsIfNecessary does; shouldNotExist cannot.
func TestServeKernelArgumentsBelow33(t *testing.T) {
	mc := rendered(t)
	cfg, _ := ignconfig.FromMachineConfig(mc)
	cfg.KernelArguments.ShouldExist = []types.KernelArgument{"b=2"}
	mc.Spec.Config.Raw, _ = ignconfig.Marshal(cfg)
	data, err := Serve(mc, semver.Version{Major: 3, Minor: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := v3_5.ParseCompatibleVersion(data)
	if err != nil {
		t.Fatal(err)
	}
	var enc mcfgv1.MachineConfig
	_ = json.Unmarshal(fileData(t, got, EncapsulatedPath), &enc)
	if strings.Join(enc.Spec.KernelArguments, " ") != "a=1 b=2" {
		t.Errorf("encapsulated kernel arguments %v, want a=1 b=2", enc.Spec.KernelArguments)
	}
	cfg.KernelArguments.ShouldNotExist = []types.KernelArgument{"c"}
	mc.Spec.Config.Raw, _ = ignconfig.Marshal(cfg)
	if _, err := Serve(mc, semver.Version{Major: 3, Minor: 2}); err == nil || !strings.Contains(err.Error(), "shouldNotExist") {
		t.Errorf("shouldNotExist for 3.2: %v", err)
	}
	if _, err := Serve(mc, semver.Version{Major: 3, Minor: 3}); err != nil {
		t.Errorf("3.3 has kernel arguments: %v", err)
	}
}

// A field an older spec lacks is refused with its name; the same config without it
// is written.
func TestEncodeRefusesNewerFields(t *testing.T) {
	cfg := ignconfig.Empty()
	cfg.Storage.Files = []types.File{{Node: types.Node{Path: "/etc/x"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{
		Source: ptr.To("https://example.com/x"), HTTPHeaders: types.HTTPHeaders{{Name: "A", Value: ptr.To("b")}}}}}}
	if _, err := Encode(cfg, semver.Version{Major: 3, Minor: 0}); err == nil || !strings.Contains(err.Error(), "httpHeaders") {
		t.Errorf("httpHeaders in 3.0: %v", err)
	}
	if _, err := Encode(cfg, semver.Version{Major: 3, Minor: 1}); err != nil {
		t.Errorf("httpHeaders in 3.1: %v", err)
	}
	if _, err := Encode(cfg, V22); err == nil || !strings.Contains(err.Error(), "storage.files[0] (/etc/x).contents.httpHeaders") {
		t.Errorf("httpHeaders in 2.2: %v", err)
	}
	cfg = ignconfig.Empty()
	cfg.Storage.Disks = []types.Disk{{Device: "/dev/vdb"}}
	cfg.Passwd.Users = []types.PasswdUser{{Name: "core", Shell: ptr.To("/bin/zsh")}}
	_, err := Encode(cfg, V22)
	if err == nil || !strings.Contains(err.Error(), "storage.disks") || !strings.Contains(err.Error(), "passwd.users[0] (core)") {
		t.Errorf("2.2 of disks and a user's shell: %v", err)
	}
}

// Spec 2.2's form of a rendered config: files on the root filesystem with overwrite
// written out, units, the core user's keys.
func TestEncode22(t *testing.T) {
	cfg, err := ignconfig.FromMachineConfig(rendered(t))
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(cfg, V22)
	if err != nil {
		t.Fatal(err)
	}
	var got config22
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Ignition.Version != "2.2.0" || len(got.Storage.Files) != 2 || got.Storage.Files[0].Filesystem != "root" ||
		got.Storage.Files[0].Overwrite == nil || *got.Storage.Files[0].Overwrite || *got.Storage.Files[0].Mode != 0o600 ||
		got.Storage.Files[1].Contents.Compression != "gzip" {
		t.Errorf("files: %s", data)
	}
	if len(got.Systemd.Units) != 1 || got.Systemd.Units[0].Name != "x.service" || !*got.Systemd.Units[0].Enabled || len(got.Systemd.Units[0].Dropins) != 1 {
		t.Errorf("units: %s", data)
	}
	if len(got.Passwd.Users) != 1 || got.Passwd.Users[0].SSHAuthorizedKeys[0] != "ssh-ed25519 AAAA core@example" {
		t.Errorf("users: %s", data)
	}
}

func TestStub(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	data, err := Stub("https://cfg.example.com:22623", "worker", ca, "s3cret-token-0123456789", StubVersion)
	if err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := v3_5.ParseCompatibleVersion(data)
	if err != nil {
		t.Fatal(ignconfig.Describe(rpt, err))
	}
	m := cfg.Ignition.Config.Merge
	if !strings.Contains(string(data), `"version":"3.1.0"`) || len(m) != 1 || *m[0].Source != "https://cfg.example.com:22623/config/worker" ||
		len(m[0].HTTPHeaders) != 1 || m[0].HTTPHeaders[0].Name != TokenHeader || *m[0].HTTPHeaders[0].Value != "Bearer s3cret-token-0123456789" {
		t.Errorf("stub: %s", data)
	}
	if cas := cfg.Ignition.Security.TLS.CertificateAuthorities; len(cas) != 1 || !strings.HasPrefix(*cas[0].Source, "data:") {
		t.Errorf("CA: %s", data)
	}
	for _, bad := range []string{"http://cfg:22623", "https://cfg:22623/config/worker", "cfg:22623"} {
		if _, err := Stub(bad, "worker", ca, "t", StubVersion); err == nil {
			t.Errorf("server %q accepted", bad)
		}
	}
	if _, err := Stub("https://cfg", "worker", ca, "t", semver.Version{Major: 3}); err == nil {
		t.Error("a 3.0 stub has no httpHeaders, and was made")
	}
}
