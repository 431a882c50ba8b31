package offline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/cmd/cmdutil"
)

// runValidate runs `mcotui validate args...` in-process with stdin as its input.
func runValidate(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = mcotui.Run(append([]string{"validate"}, args...), cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

const td = "testdata/validate/"

const firstBoot = "applies only when a machine is first provisioned; a running node cannot change it (mcotui and MCO refuse such a change)"

// spec2 is the warning on a spec 2.2 config, which MCO converts (TestParseAndConvert).
const spec2 = "Ignition spec 2.2.0 is converted to spec 3.5.0 as MCO converts it: of duplicate files and units the last one wins, the core user's SSH keys are merged without duplicates; write spec 3 to apply exactly what you write"

func TestValidateReports(t *testing.T) {
	tests := []struct {
		name   string
		files  []string
		code   int
		stdout []string
		stderr string
	}{{
		name:   "good MachineConfigs and every Ignition spec from 3.0 to 3.5",
		files:  []string{"good-mc.yaml", "good-mc.json", "ign-3.0.0.json", "ign-3.1.0.json", "ign-3.2.0.json", "ign-3.3.0.json", "ign-3.4.0.json", "ign-3.5.0.json"},
		code:   0,
		stderr: "no problems in 8 files\n",
	}, {
		name:  "bad YAML MachineConfig",
		files: []string{"bad-mc.yaml"},
		code:  1,
		stdout: []string{
			td + "bad-mc.yaml:4:3: warning: $.metadata.labels['machineconfiguration.openshift.io/role']: no machineconfiguration.openshift.io/role label: the master and worker pools will not select this MachineConfig; label it with the role of the pool it is for",
			td + `bad-mc.yaml:6:15: error: $.spec.kernelType: kernelType "rt" is not valid: use default, realtime or 64k-pages, or leave it empty`,
			td + `bad-mc.yaml:7:15: warning: $.spec.osImageURL: osImageURL "quay.io/example/os:latest" is not pinned by digest: a tag can move, and nodes would boot different images; write it as registry/repository@sha256:<digest>`,
			td + `bad-mc.yaml:8:3: warning: $.spec.kernelArgs: unknown field "kernelArgs": a MachineConfig's spec has osImageURL, baseOSExtensionsContainerImage, config, kernelArguments, extensions, fips, kernelType; the API server drops or refuses it`,
			td + "bad-mc.yaml:15:17: error: $.spec.config.storage.files[0].path: path not absolute",
			td + "bad-mc.yaml:19:11: warning: $.spec.config.storage.files[1].append: storage.files append " + firstBoot + "; write the whole file with contents instead",
			td + "bad-mc.yaml:22:11: warning: $.spec.config.storage.disks[0]: storage.disks " + firstBoot,
			td + `bad-mc.yaml:26:11: warning: $.spec.config.passwd.users[0]: user "alice" ` + firstBoot + "; of users, only the core user's sshAuthorizedKeys and passwordHash can change",
			td + "bad-mc.yaml:28:11: warning: $.spec.config.passwd.users[1].uid: core user's uid " + firstBoot + "; of users, only the core user's sshAuthorizedKeys and passwordHash can change",
			td + `bad-mc.yaml:31:5: warning: $.spec.config.kernelArguments: unknown key "kernelArguments": Ignition ignores it`,
			td + "bad-mc.yaml:31:5: warning: $.spec.config.kernelArguments: Ignition's kernelArguments section " + firstBoot + "; set kernel arguments in the MachineConfig's spec.kernelArguments instead",
			td + `bad-mc.yaml:34:5: warning: $.spec.config.sytemd: unknown key "sytemd": Ignition ignores it`,
		},
		stderr: "2 errors, 10 warnings in 1 file\n",
	}, {
		name:  "PinnedImageSets: a tag, and no images",
		files: []string{"pinnedimagesets.yaml"},
		code:  1,
		stdout: []string{
			td + `pinnedimagesets.yaml:8:11: error: $.spec.pinnedImages[1].name: image reference "quay.io/openshift-release-dev/ocp-release:4.20" is not by digest: a tag can move, so what is pinned would not be what was tested; write it as host/repository@sha256:<64 hex digits>`,
			td + `pinnedimagesets.yaml:15:17: error: $.spec.pinnedImages: PinnedImageSet empty lists no images: spec.pinnedImages needs at least 1`,
		},
		stderr: "2 errors, 0 warnings in 1 file\n",
	}, {
		name:  "type errors, positioned in YAML and JSON",
		files: []string{"type-error.yaml", "bad-mc.json", "ign-bad.json", "spec-type-error.yaml"},
		code:  1,
		stdout: []string{
			td + "bad-mc.json:11:59: error: $.spec.config.storage.files[0].mode: must be an integer, not a string",
			td + "ign-bad.json:5:34: error: $.storage.files[0].mode: must be an integer, not a string",
			td + "spec-type-error.yaml:8:20: error: $.spec.kernelArguments: MachineConfig 99-worker-kargs: json: cannot unmarshal string into Go struct field MachineConfigSpec.spec.kernelArguments of type []string",
			td + "type-error.yaml:15:17: error: $.spec.config.storage.files[1].mode: must be an integer, not a string",
		},
		stderr: "4 errors, 0 warnings in 4 files\n",
	}, {
		name:  "syntax errors",
		files: []string{"yaml-syntax.yaml", "json-syntax.json"},
		code:  1,
		stdout: []string{
			td + "json-syntax.json:5:28: error: $: invalid JSON: invalid character '}' looking for beginning of object key string",
			td + "yaml-syntax.yaml:5:1: error: $: invalid YAML or JSON: did not find expected ',' or ']'",
		},
		stderr: "2 errors, 0 warnings in 2 files\n",
	}, {
		name:  "Ignition spec versions",
		files: []string{"ign-2.2.0.json", "ign-3.6.0.json", "mc-versions.yaml"},
		code:  1,
		stdout: []string{
			td + "ign-2.2.0.json:1:26: warning: $.ignition.version: " + spec2,
			td + "ign-3.6.0.json:1:26: error: $.ignition.version: Ignition spec 3.6.0 is not supported: use a spec version from 3.0.0 to 3.5.0",
			td + "mc-versions.yaml:11:16: warning: $.spec.config.ignition.version: " + spec2,
			td + "mc-versions.yaml:22:16: error: $.spec.config.ignition.version: must be a string, not a number",
			td + "mc-versions.yaml:31:11: error: $.spec.config.ignition.version: Ignition config has no spec version: use a spec version from 3.0.0 to 3.5.0",
			td + "mc-versions.yaml:40:11: error: $.spec.config: must be an Ignition config: an object with ignition.version and the sections to apply",
			td + "mc-versions.yaml:50:9: warning: $.spec.fips: fips " + firstBoot,
		},
		stderr: "4 errors, 3 warnings in 3 files\n",
	}, {
		name:  "warnings only exit 0",
		files: []string{"multi.yaml", "raw-ignition.yaml", "empty.yaml"},
		code:  0,
		stdout: []string{
			td + "empty.yaml:1:1: warning: $: the file holds no object: no MachineConfig, no other manifest, no Ignition config",
			td + "multi.yaml:23:7: warning: $.kind: ConfigMap is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig",
			td + "multi.yaml:44:15: warning: $.spec.config.storage.directories[0]: storage.directories " + firstBoot,
			td + "raw-ignition.yaml:2:1: warning: $: Ignition reads JSON only: this config is checked as the JSON it converts to; convert it before a machine gets it",
			td + `raw-ignition.yaml:8:9: warning: $.storage.files[0].contents.inline: unknown key "inline": Ignition ignores it`,
		},
		stderr: "0 errors, 5 warnings in 3 files\n",
	}, {
		name:  "other objects",
		files: []string{"objects.yaml"},
		code:  1,
		stdout: []string{
			td + "objects.yaml:1:13: error: $.apiVersion: MachineConfigPool has apiVersion machineconfiguration.openshift.io/v1beta1; set it to machineconfiguration.openshift.io/v1",
			td + "objects.yaml:6:11: error: $.spec.paused: MachineConfigPool worker: json: cannot unmarshal string into Go struct field MachineConfigPoolSpec.spec.paused of type bool",
			td + "objects.yaml:8:1: error: $: expected a Kubernetes object (a mapping with apiVersion and kind)",
			td + "objects.yaml:18:1: error: $.kind: object has no kind",
		},
		stderr: "4 errors, 0 warnings in 1 file\n",
	}, {
		name:  "Ignition's own validation of a raw config",
		files: []string{"ign-invalid.json"},
		code:  1,
		stdout: []string{
			td + "ign-invalid.json:5:34: warning: $.storage.files[0].mode: setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0",
			td + "ign-invalid.json:6:7: error: $.storage.files[1]: duplicate entry defined",
			td + "ign-invalid.json:8:15: warning: $.storage.links[0]: storage.links " + firstBoot,
			td + "ign-invalid.json:10:25: warning: $.passwd.groups[0]: passwd.groups " + firstBoot,
			td + "ign-invalid.json:11:34: error: $.systemd.units[0].name: invalid systemd unit extension",
			td + `ign-invalid.json:12:3: warning: $.extra: unknown key "extra": Ignition ignores it`,
		},
		stderr: "2 errors, 4 warnings in 1 file\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := make([]string, len(tt.files))
			for i, f := range tt.files {
				args[i] = td + f
			}
			code, stdout, stderr := runValidate(t, "", args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			want := ""
			if len(tt.stdout) > 0 {
				want = strings.Join(tt.stdout, "\n") + "\n"
			}
			if stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
			}
			if stderr != tt.stderr {
				t.Errorf("stderr: %q, want %q", stderr, tt.stderr)
			}
		})
	}
}

func TestValidateUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no file", nil, "Error: requires at least 1 arg(s), only received 0\nSee 'mcotui validate --help'.\n"},
		{"missing file", []string{td + "good-mc.yaml", td + "nope.yaml"}, "Error: " + td + "nope.yaml: no such file\n"},
		{"directory", []string{"testdata/validate"}, "Error: testdata/validate is a directory: name its files, for example testdata/validate/*.yaml\n"},
		{"bad output format", []string{"-o", "xml", td + "good-mc.yaml"}, "Error: --output \"xml\" is not a format; use one of text, json\nSee 'mcotui validate --help'.\n"},
		{"unknown flag", []string{"--strict", td + "good-mc.yaml"}, "Error: unknown flag: --strict\nSee 'mcotui validate --help'.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runValidate(t, "", tt.args...)
			if code != 2 || stdout != "" || stderr != tt.stderr {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", code, stdout, stderr, tt.stderr)
			}
		})
	}
}

func TestValidateStdin(t *testing.T) {
	code, stdout, _ := runValidate(t, `{"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "x"}]}}`, "-")
	want := "<stdin>:1:67: error: $.storage.files[0].path: path not absolute\n"
	if code != 1 || stdout != want {
		t.Errorf("got exit %d, stdout %q; want 1, %q", code, stdout, want)
	}
}

func TestValidateJSON(t *testing.T) {
	code, stdout, _ := runValidate(t, "", "-o", "json", td+"type-error.yaml", td+"multi.yaml")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	want := []map[string]any{
		{"file": td + "multi.yaml", "line": 23.0, "column": 7.0, "severity": "warning", "path": "$.kind", "message": "ConfigMap is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig"},
		{"file": td + "multi.yaml", "line": 44.0, "column": 15.0, "severity": "warning", "path": "$.spec.config.storage.directories[0]", "message": "storage.directories " + firstBoot},
		{"file": td + "type-error.yaml", "line": 15.0, "column": 17.0, "severity": "error", "path": "$.spec.config.storage.files[1].mode", "message": "must be an integer, not a string"},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("got %s\nwant %s", g, w)
	}

	_, stdout, _ = runValidate(t, "", "-o", "json", td+"good-mc.yaml")
	if stdout != "[]\n" {
		t.Errorf("no problems: got %q, want []", stdout)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestValidateRuncOnRHEL10: `validate --os-image-stream rhel-10` refuses a
// ContainerRuntimeConfig asking for runc with the message render gives (exit 1);
// without the flag the same file is clean.
func TestValidateRuncOnRHEL10(t *testing.T) {
	const crc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: ContainerRuntimeConfig\nmetadata:\n  name: runc\nspec:\n  containerRuntimeConfig:\n    defaultRuntime: runc\n"
	code, out, errOut := runValidate(t, crc, "--os-image-stream", "rhel-10", "-")
	if code != 1 || !strings.Contains(out, "<stdin>:7:21: error: $.spec.containerRuntimeConfig.defaultRuntime: on OS image stream rhel-10: MachineConfigPool selected by ContainerRuntimeConfig runc targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runValidate(t, crc, "-"); code != 0 {
		t.Errorf("without a stream: exit %d\n%s%s", code, out, errOut)
	}
}
