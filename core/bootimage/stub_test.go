package bootimage_test

import (
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/ignconfig"
)

func TestUpgradeStub(t *testing.T) {
	in := readFile(t, "stub-2.2.json")
	up, err := bootimage.UpgradeStub("worker-user-data", in)
	if err != nil {
		t.Fatal(err)
	}
	if !up.Changed || up.From != "2.2.0" || up.To != ignconfig.Version {
		t.Errorf("upgrade = changed %t, %s -> %s", up.Changed, up.From, up.To)
	}
	cfg, _, err := ignconfig.Parse(up.Data)
	if err != nil {
		t.Fatalf("the converted stub does not parse: %v\n%s", err, up.Data)
	}
	if cfg.Ignition.Version != "3.5.0" {
		t.Errorf("version = %s", cfg.Ignition.Version)
	}
	if m := cfg.Ignition.Config.Merge; len(m) != 1 || *m[0].Source != "https://api-int.ci-ln-hmy310k-72292.origin-ci-int-gce.dev.rhcloud.com:22623/config/worker" {
		t.Errorf("merge = %+v", m)
	}
	if cas := cfg.Ignition.Security.TLS.CertificateAuthorities; len(cas) != 1 || !strings.HasPrefix(*cas[0].Source, "data:text/plain;charset=utf-8;base64,LS0tLS1CRUdJTi") {
		t.Errorf("certificateAuthorities = %+v", cas)
	}
	if cfg.Ignition.Config.Replace.Source != nil || len(cfg.Storage.Files) != 0 || len(cfg.Systemd.Units) != 0 || len(cfg.Passwd.Users) != 0 {
		t.Errorf("the stub grew: %s", up.Data)
	}

	// A spec 3 stub is left as it is, byte for byte, as is the result of an upgrade.
	again, err := bootimage.UpgradeStub("worker-user-data", up.Data)
	if err != nil || again.Changed || string(again.Data) != string(up.Data) || again.From != "3.5.0" {
		t.Errorf("upgrading a spec 3 stub: %+v, %v", again, err)
	}
}

func TestUpgradeStubFields(t *testing.T) {
	in := `{"ignition": {"version": "2.2.0",
		"config": {
			"append": [{"source": "https://mcs.example.com:22623/config/worker", "verification": {"hash": "sha512-` + strings.Repeat("0", 128) + `"}}],
			"replace": {"source": "https://mcs.example.com:22623/config/infra", "verification": {}}
		},
		"timeouts": {"httpResponseHeaders": 20, "httpTotal": 600},
		"security": {"tls": {"certificateAuthorities": []}}
	}, "storage": {"files": []}, "systemd": {"units": null}}`
	up, err := bootimage.UpgradeStub("infra-user-data", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ignconfig.Parse(up.Data)
	if err != nil {
		t.Fatal(err)
	}
	ic := cfg.Ignition
	if len(ic.Config.Merge) != 1 || ic.Config.Merge[0].Verification.Hash == nil || !strings.HasPrefix(*ic.Config.Merge[0].Verification.Hash, "sha512-000") {
		t.Errorf("merge = %+v", ic.Config.Merge)
	}
	if ic.Config.Replace.Source == nil || *ic.Config.Replace.Source != "https://mcs.example.com:22623/config/infra" {
		t.Errorf("replace = %+v", ic.Config.Replace)
	}
	if ic.Timeouts.HTTPResponseHeaders == nil || *ic.Timeouts.HTTPResponseHeaders != 20 || ic.Timeouts.HTTPTotal == nil || *ic.Timeouts.HTTPTotal != 600 {
		t.Errorf("timeouts = %+v", ic.Timeouts)
	}
}

// TestUpgradeStubRefused covers configs that are more than a stub, or not Ignition:
// each is refused with an error that names the secret and the field.
func TestUpgradeStubRefused(t *testing.T) {
	stub := func(rest string) string {
		return `{"ignition": {"version": "2.2.0", "config": {"append": [{"source": "https://mcs.example.com:22623/config/worker"}]}}` + rest + `}`
	}
	tests := []struct {
		name, in, want string
	}{
		{"a file", stub(`, "storage": {"files": [{"filesystem": "root", "path": "/etc/motd", "contents": {"source": "data:,hi"}}]}`),
			`field "storage.files" is not part of an Ignition stub`},
		{"a unit", stub(`, "systemd": {"units": [{"name": "foo.service", "enabled": true}]}`),
			`field "systemd.units" is not part of an Ignition stub`},
		{"a user", stub(`, "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}]}`),
			`field "passwd.users" is not part of an Ignition stub`},
		{"networkd", stub(`, "networkd": {"units": [{"name": "10-eth0.network"}]}`),
			`field "networkd.units" is not part of an Ignition stub`},
		{"an unknown section", stub(`, "kernelArguments": {"shouldExist": ["nosmt"]}`),
			`field "kernelArguments" is not part of an Ignition stub`},
		{"an unknown ignition field", `{"ignition": {"version": "2.2.0", "proxy": {"httpProxy": "http://proxy"}}}`,
			`field "ignition.proxy" is not part of an Ignition stub`},
		{"an unknown resource field", `{"ignition": {"version": "2.2.0", "config": {"append": [{"source": "https://x", "httpHeaders": []}]}}}`,
			`field "ignition.config.append.0.httpHeaders" is not part of an Ignition stub`},
		{"an append without source", `{"ignition": {"version": "2.2.0", "config": {"append": [{"verification": {}}]}}}`,
			`field "ignition.config.append.0.source" is missing or empty`},
		{"a timeout that is not a number", `{"ignition": {"version": "2.2.0", "timeouts": {"httpTotal": "600"}}}`,
			`field "ignition.timeouts.httpTotal" is not a number`},
		{"a hash Ignition 3 rejects", `{"ignition": {"version": "2.2.0", "config": {"append": [{"source": "https://x", "verification": {"hash": "md5-abc"}}]}}}`,
			`the stub converted from spec 2.2.0 is not valid Ignition 3.5.0: $.ignition.config.merge.0.verification.hash: unrecognized hash function`},
		{"spec 1", `{"ignitionVersion": 1}`, `not an Ignition config: no ignition.version`},
		{"an experimental spec", `{"ignition": {"version": "2.4.0-experimental"}}`,
			`Ignition spec version 2.4.0-experimental is not one of 2.0.0, 2.1.0, 2.2.0, 2.3.0 or 3.x; rewrite the stub as spec 3`},
		{"not JSON", `#cloud-config`, `not an Ignition config: the value is not a JSON object`},
		{"empty", ``, `not an Ignition config: the value is not a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bootimage.UpgradeStub("worker-user-data", []byte(tt.in))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "converting ignition stub failed: secret openshift-machine-api/worker-user-data key userData: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("err = %q, want one containing %q", msg, tt.want)
			}
		})
	}
}
