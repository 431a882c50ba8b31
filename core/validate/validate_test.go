package validate

import (
	"slices"
	"strings"
	"testing"
)

// mcHeader is a MachineConfig up to its spec.config key, which is on line 8.
const mcHeader = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: t
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
`

// mc returns a MachineConfig whose spec.config is cfg, indented by 4 spaces: line n of
// cfg is line 8+n of the file, and its column c is column c+4.
func mc(cfg string) string {
	var b strings.Builder
	b.WriteString(mcHeader)
	for l := range strings.Lines(strings.TrimPrefix(cfg, "\n")) {
		b.WriteString("    " + l)
	}
	return b.String()
}

func lines(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func check(t *testing.T, file, data string, want ...string) {
	t.Helper()
	got := lines(File(file, []byte(data)))
	if !slices.Equal(got, want) {
		t.Errorf("File(%s):\ngot:\n  %s\nwant:\n  %s", file, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

const firstBoot = "applies only when a machine is first provisioned; a running node cannot change it (mcotui and MCO refuse such a change)"

// TestPositions checks that every kind of report entry lands on the field the user
// wrote, in YAML and in JSON.
func TestPositions(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             []string
	}{{
		name: "validation error in YAML, by context path",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.5.0
storage:
  files:
    - path: /etc/a
    - path: etc/b
`),
		want: []string{"mc.yaml:14:17: error: $.spec.config.storage.files[1].path: path not absolute"},
	}, {
		name: "unused key is reported at the key",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.4.0
storage:
  filez: []
`),
		want: []string{"mc.yaml:12:7: warning: $.spec.config.storage.filez: unknown key \"filez\": Ignition ignores it"},
	}, {
		name: "missing field is reported at its parent",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.4.0
systemd:
  units:
    - enabled: true
`),
		want: []string{"mc.yaml:13:11: error: $.spec.config.systemd.units[0].name: invalid systemd unit extension"},
	}, {
		name: "type error in YAML, by offset into the converted JSON",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.4.0
storage:
  files:
    - path: /etc/a
    - path: /etc/b
      mode: abc
`),
		want: []string{"mc.yaml:15:17: error: $.spec.config.storage.files[1].mode: must be an integer, not a string"},
	}, {
		name: "type error on a list",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.4.0
storage:
  files: {path: /etc/a}
`),
		want: []string{"mc.yaml:12:14: error: $.spec.config.storage.files: must be a list, not an object"},
	}, {
		name: "type error in a raw JSON config",
		file: "ign.json",
		data: `{
  "ignition": {"version": "3.3.0"},
  "storage": {"files": [{"path": "/etc/a", "overwrite": "yes"}]}
}`,
		want: []string{"ign.json:3:57: error: $.storage.files[0].overwrite: must be true or false, not a string"},
	}, {
		name: "JSON syntax error that YAML accepts is Ignition's",
		file: "ign.json",
		data: "{\"ignition\": {\"version\": \"3.3.0\"},\n  \"storage\": {\"files\": [],}\n}\n",
		want: []string{"ign.json:2:27: error: $: invalid JSON: invalid character '}' looking for beginning of object key string"},
	}, {
		name: "JSON syntax error that YAML refuses too",
		file: "mc.json",
		data: "{\n  \"kind\": \"MachineConfig\"\n  \"apiVersion\": \"v1\"\n}\n",
		want: []string{`mc.json:3:3: error: $: invalid JSON: invalid character '"' after object key:value pair`},
	}, {
		name: "YAML syntax error",
		file: "mc.yaml",
		data: "kind: MachineConfig\nmetadata:\n  labels: {a: b\n",
		want: []string{"mc.yaml:3:1: error: $: invalid YAML or JSON: did not find expected ',' or '}'"},
	}, {
		name: "JSON MachineConfig",
		file: "mc.json",
		data: `{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
 "metadata": {"name": "x", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
 "spec": {"config": {"ignition": {"version": "3.2.0"},
   "storage": {"files": [{"path": "/etc/a", "mode": "420"}]}}}}`,
		want: []string{"mc.json:4:53: error: $.spec.config.storage.files[0].mode: must be an integer, not a string"},
	}, {
		name: "key given twice, reported once, at the second",
		file: "mc.yaml",
		data: mc(`
ignition:
  version: 3.4.0
storage: {}
storage: {}
`),
		want: []string{`mc.yaml:12:5: error: $.spec.config.storage: MachineConfig t: key "storage" is given twice, first on line 11`},
	}, {
		name: "number JSON cannot hold in a raw YAML config",
		file: "ign.yaml",
		data: "ignition: {version: 3.4.0}\nstorage:\n  files: [{path: /a, mode: .inf}]\n",
		want: []string{
			"ign.yaml:1:1: warning: $: Ignition reads JSON only: this config is checked as the JSON it converts to; convert it before a machine gets it",
			"ign.yaml:3:28: error: $.storage.files[0].mode: .inf is not a number JSON can hold",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, tt.file, tt.data, tt.want...)
		})
	}
}
