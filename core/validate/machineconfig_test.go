package validate

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestMachineConfigFields(t *testing.T) {
	const head = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: t\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n"
	tests := []struct {
		name, spec string
		want       []string
	}{{
		name: "kernel types MCO knows",
		spec: "  kernelType: 64k-pages\n",
	}, {
		name: "empty kernel type",
		spec: "  kernelType: \"\"\n",
	}, {
		name: "unknown kernel type",
		spec: "  kernelType: rt\n",
		want: []string{`mc.yaml:8:15: error: $.spec.kernelType: kernelType "rt" is not valid: use default, realtime or 64k-pages, or leave it empty`},
	}, {
		name: "supported extensions",
		spec: "  extensions: [usbguard, kernel-devel]\n",
	}, {
		name: "unsupported extension",
		spec: "  extensions:\n    - usbguard\n    - vim\n",
		want: []string{`mc.yaml:10:7: error: $.spec.extensions[1]: extension "vim" is not supported: use one of ipsec, kerberos, kernel-devel, sandboxed-containers, sysstat, two-node-ha, usbguard`},
	}, {
		name: "unknown spec field",
		spec: "  kernelArgs: [nosmt]\n",
		want: []string{`mc.yaml:8:3: warning: $.spec.kernelArgs: unknown field "kernelArgs": a MachineConfig's spec has osImageURL, baseOSExtensionsContainerImage, config, kernelArguments, extensions, fips, kernelType; the API server drops or refuses it`},
	}, {
		name: "fips",
		spec: "  fips: true\n",
		want: []string{"mc.yaml:8:9: warning: $.spec.fips: fips " + firstBoot},
	}, {
		name: "fips off",
		spec: "  fips: false\n",
	}, {
		name: "OS image by digest",
		spec: "  osImageURL: quay.io/org/os@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
	}, {
		name: "OS image by tag",
		spec: "  osImageURL: quay.io/org/os:latest\n",
		want: []string{`mc.yaml:8:15: warning: $.spec.osImageURL: osImageURL "quay.io/org/os:latest" is not pinned by digest: a tag can move, and nodes would boot different images; write it as registry/repository@sha256:<digest>`},
	}, {
		name: "OS image as a URL",
		spec: "  osImageURL: https://quay.io/org/os\n",
		want: []string{`mc.yaml:8:15: error: $.spec.osImageURL: osImageURL "https://quay.io/org/os" is not a container image pull spec: write it as registry/repository@sha256:<digest>`},
	}, {
		name: "wrong type in spec, positioned by the decoder",
		spec: "  kernelArguments:\n    - nosmt\n    - [a]\n",
		want: []string{"mc.yaml:10:7: error: $.spec.kernelArguments[1]: MachineConfig t: json: cannot unmarshal array into Go struct field MachineConfigSpec.spec.kernelArguments of type string"},
	}, {
		name: "null config",
		spec: "  config: null\n",
	}, {
		name: "config that is no object",
		spec: "  config: [a]\n",
		want: []string{"mc.yaml:8:11: error: $.spec.config: must be an Ignition config: an object with ignition.version and the sections to apply"},
	}, {
		name: "empty config object",
		spec: "  config: {}\n",
		want: []string{"mc.yaml:8:11: error: $.spec.config.ignition.version: Ignition config has no spec version: use a spec version from 3.0.0 to 3.5.0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, "mc.yaml", head+tt.spec, tt.want...)
		})
	}
}

func TestIgnitionVersions(t *testing.T) {
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		t.Run(v, func(t *testing.T) {
			check(t, "ign.json", `{"ignition": {"version": "`+v+`"}, "storage": {"files": [{"path": "/etc/a", "mode": 420}]}}`)
			check(t, "mc.yaml", mc("ignition:\n  version: "+v+"\n"))
		})
	}
	tests := []struct{ name, cfg, want string }{{
		// MCO's TestParseAndConvert: a spec 2.2 config is converted, not refused.
		name: "spec 2.2 is converted",
		cfg:  "ignition:\n  version: 2.2.0\n",
		want: "mc.yaml:10:16: warning: $.spec.config.ignition.version: Ignition spec 2.2.0 is converted to spec 3.5.0 as MCO converts it: of duplicate files and units the last one wins, the core user's SSH keys are merged without duplicates; write spec 3 to apply exactly what you write",
	}, {
		name: "spec 2.3 MCO does not read",
		cfg:  "ignition:\n  version: 2.3.0\n",
		want: "mc.yaml:10:16: error: $.spec.config.ignition.version: Ignition spec 2.3.0 is not supported: use a spec version from 3.0.0 to 3.5.0 (MCO converts spec 2.0.0, 2.1.0, 2.2.0 only; translate other spec 2 configs to spec 3)",
	}, {
		name: "newer than mcotui reads",
		cfg:  "ignition:\n  version: 3.6.0\n",
		want: "mc.yaml:10:16: error: $.spec.config.ignition.version: Ignition spec 3.6.0 is not supported: use a spec version from 3.0.0 to 3.5.0",
	}, {
		name: "not a version",
		cfg:  "ignition:\n  version: latest\n",
		want: "mc.yaml:10:16: error: $.spec.config.ignition.version: \"latest\" is not an Ignition spec version: use a spec version from 3.0.0 to 3.5.0",
	}, {
		name: "a number",
		cfg:  "ignition:\n  version: 3.4\n",
		want: "mc.yaml:10:16: error: $.spec.config.ignition.version: must be a string, not a number",
	}, {
		name: "missing",
		cfg:  "ignition: {}\nstorage: {}\n",
		want: "mc.yaml:9:15: error: $.spec.config.ignition.version: Ignition config has no spec version: use a spec version from 3.0.0 to 3.5.0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, "mc.yaml", mc(tt.cfg), tt.want)
		})
	}
}

// TestSpec2ConversionRefusesOtherUsers: MCO's removeIgnDuplicateFilesUnitsUsers refuses
// a spec 2 config with a user other than core, in its words.
func TestSpec2ConversionRefusesOtherUsers(t *testing.T) {
	check(t, "mc.yaml", mc("ignition:\n  version: 2.2.0\npasswd:\n  users:\n  - name: core\n  - name: admin\n"),
		"mc.yaml:9:5: error: $.spec.config: unexpected user with name: admin. Only core user is supported",
		"mc.yaml:10:16: warning: $.spec.config.ignition.version: Ignition spec 2.2.0 is converted to spec 3.5.0 as MCO converts it: of duplicate files and units the last one wins, the core user's SSH keys are merged without duplicates; write spec 3 to apply exactly what you write",
		`mc.yaml:14:9: warning: $.spec.config.passwd.users[1]: user "admin" applies only when a machine is first provisioned; a running node cannot change it (mcotui and MCO refuse such a change); of users, only the core user's sshAuthorizedKeys and passwordHash can change`)
}

func TestDocuments(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{{
		name: "no role label",
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: t\n",
		want: []string{"f.yaml:4:3: warning: $.metadata.labels['machineconfiguration.openshift.io/role']: no machineconfiguration.openshift.io/role label: the master and worker pools will not select this MachineConfig; label it with the role of the pool it is for"},
	}, {
		name: "no name",
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  labels: {machineconfiguration.openshift.io/role: worker}\n",
		want: []string{"f.yaml:1:1: error: $.metadata.name: MachineConfig has no metadata.name"},
	}, {
		name: "wrong apiVersion",
		data: "apiVersion: machineconfiguration.openshift.io/v1alpha1\nkind: MachineConfigPool\nmetadata:\n  name: p\n",
		want: []string{"f.yaml:1:13: error: $.apiVersion: MachineConfigPool has apiVersion machineconfiguration.openshift.io/v1alpha1; set it to machineconfiguration.openshift.io/v1"},
	}, {
		name: "no apiVersion",
		data: "kind: MachineConfiguration\nmetadata:\n  name: cluster\n",
		want: []string{"f.yaml:1:1: error: $.apiVersion: MachineConfiguration has no apiVersion; set it to operator.openshift.io/v1"},
	}, {
		name: "pool that does not decode",
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: p\nspec:\n  maxUnavailable: [1]\n",
		want: []string{"f.yaml:6:19: error: $.spec.maxUnavailable: MachineConfigPool p: json: cannot unmarshal array into Go struct field MachineConfigPoolSpec.spec.maxUnavailable of type int32"},
	}, {
		name: "other kinds",
		data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		want: []string{"f.yaml:2:7: warning: $.kind: ConfigMap is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig"},
	}, {
		name: "no kind",
		data: "metadata:\n  name: x\n",
		want: []string{"f.yaml:1:1: error: $.kind: object has no kind"},
	}, {
		name: "every document of a stream, List items in their place",
		data: "- a\n---\napiVersion: v1\nkind: List\nitems:\n  - 1\n  - apiVersion: v1\n    kind: Secret\n---\n\n---\nfoo\n",
		want: []string{
			"f.yaml:1:1: error: $: expected a Kubernetes object (a mapping with apiVersion and kind)",
			"f.yaml:6:5: error: $: List: each item must be an object",
			"f.yaml:8:11: warning: $.kind: Secret is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig",
			"f.yaml:12:1: error: $: expected a Kubernetes object (a mapping with apiVersion and kind)",
		},
	}, {
		name: "empty file",
		data: "# nothing\n",
		want: []string{"f.yaml:1:1: warning: $: the file holds no object: no MachineConfig, no other manifest, no Ignition config"},
	}, {
		name: "raw Ignition config in YAML",
		data: "ignition:\n  version: 3.5.0\n",
		want: []string{"f.yaml:1:1: warning: $: Ignition reads JSON only: this config is checked as the JSON it converts to; convert it before a machine gets it"},
	}, {
		name: "YAML flow style is YAML, not bad JSON",
		data: "{apiVersion: v1, kind: Namespace, metadata: {name: n}}\n",
		want: []string{"f.yaml:1:24: warning: $.kind: Namespace is not checked: validate checks MachineConfig, MachineConfigPool, MachineConfiguration, PinnedImageSet, KubeletConfig and ContainerRuntimeConfig"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, "f.yaml", tt.data, tt.want...)
		})
	}
}

func TestSortAndFormat(t *testing.T) {
	ps := []Problem{
		{File: "b", Line: 1, Col: 1, Severity: Warning, Path: "$", Message: "m1"},
		{File: "a", Line: 2, Col: 1, Severity: Error, Path: "$.x", Message: "m2"},
		{File: "a", Line: 1, Col: 9, Severity: Error, Path: "$.y", Message: "m3"},
		{File: "a", Line: 1, Col: 9, Severity: Warning, Path: "$.z", Message: "m4"},
	}
	Sort(ps)
	want := []string{"a:1:9: error: $.y: m3", "a:1:9: warning: $.z: m4", "a:2:1: error: $.x: m2", "b:1:1: warning: $: m1"}
	if got := lines(ps); !slices.Equal(got, want) {
		t.Errorf("Sort: got %q, want %q", got, want)
	}
	b, err := json.Marshal(ps[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"file":"a","line":1,"column":9,"severity":"error","path":"$.y","message":"m3"}`; got != want {
		t.Errorf("JSON: got %s, want %s", got, want)
	}
}
