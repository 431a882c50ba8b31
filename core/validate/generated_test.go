package validate

import (
	"slices"
	"strings"
	"testing"
)

// TestGeneratedInputs: a KubeletConfig or ContainerRuntimeConfig the controller would
// refuse is an error at the line of the refused field, with the controller's message;
// one it accepts is clean.
func TestGeneratedInputs(t *testing.T) {
	const kubelet = "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata:\n  name: kc\nspec:\n"
	const crio = "apiVersion: machineconfiguration.openshift.io/v1\nkind: ContainerRuntimeConfig\nmetadata:\n  name: crc\nspec:\n"
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"kubelet ok", kubelet + "  kubeletConfig:\n    maxPods: 300\n", nil},
		{"log level", kubelet + "  logLevel: 11\n", []string{
			"f.yaml:6:13: error: $.spec.logLevel: KubeletConfig kc: KubeletConfig's LogLevel is not valid [0,10]: 11 (the controller refuses it and generates no MachineConfig for it)"}},
		{"cgroup driver", kubelet + "  kubeletConfig:\n    maxPods: 300\n    cgroupDriver: cgroupfs\n", []string{
			"f.yaml:8:19: error: $.spec.kubeletConfig.cgroupDriver: KubeletConfig kc: KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs (the controller refuses it and generates no MachineConfig for it)"}},
		{"swap", kubelet + "  kubeletConfig:\n    memorySwap:\n      swapBehavior: LimitedSwap\n", []string{
			"f.yaml:8:21: error: $.spec.kubeletConfig.memorySwap.swapBehavior: KubeletConfig kc: KubeletConfiguration: swapBehavior is not allowed to be set, but contains: LimitedSwap (the controller refuses it and generates no MachineConfig for it)"}},
		{"misspelt", kubelet + "  kubeletConfig:\n    maxPod: 300\n", []string{
			`f.yaml:7:5: error: $.spec.kubeletConfig: KubeletConfig kc: KubeletConfig could not be unmarshalled, err: error unmarshaling JSON: while decoding JSON: json: unknown field "maxPod" (the controller refuses it and generates no MachineConfig for it)`}},
		{"auto sizing", kubelet + "  autoSizingReserved: true\n", []string{
			"f.yaml:6:23: error: $.spec.autoSizingReserved: KubeletConfig kc: KubeletConfig: autoSizingReserved is not supported by mcotui: MCO implements it with OpenShift's node sizing script (/etc/node-sizing-enabled.env), which this kubelet does not run; set kubeletConfig.systemReserved instead (the controller refuses it and generates no MachineConfig for it)"}},
		{"crio ok", crio + "  containerRuntimeConfig:\n    pidsLimit: 4096\n    logLevel: debug\n", nil},
		{"crio log level", crio + "  containerRuntimeConfig:\n    logLevel: loud\n", []string{
			`f.yaml:7:15: error: $.spec.containerRuntimeConfig.logLevel: ContainerRuntimeConfig crc: invalid LogLevel "loud", must be one of error, fatal, panic, warn, info, debug, or trace (the controller refuses it and generates no MachineConfig for it)`}},
		{"crio runtime", crio + "  containerRuntimeConfig:\n    defaultRuntime: kata\n", []string{
			`f.yaml:7:21: error: $.spec.containerRuntimeConfig.defaultRuntime: ContainerRuntimeConfig crc: invalid DefaultRuntime "kata", must be one of crun, runc (the controller refuses it and generates no MachineConfig for it)`}},
		{"wrong apiVersion", "apiVersion: v1\nkind: KubeletConfig\nmetadata:\n  name: kc\n", []string{
			"f.yaml:1:13: error: $.apiVersion: KubeletConfig has apiVersion v1; set it to machineconfiguration.openshift.io/v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range File("f.yaml", []byte(tc.data)) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestRuncOnRHEL10: with the pools' stream known to be RHEL 10, a MachineConfig whose
// CRI-O drop-ins make runc the default runtime and a ContainerRuntimeConfig asking for
// runc are errors with MCO's message (osstream.CheckRunc's, which render and the
// controller give), at the drop-in and at defaultRuntime; on rhel-9, or with no stream
// given, they are clean, and crun is clean everywhere.
func TestRuncOnRHEL10(t *testing.T) {
	const mc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-runc\n  labels:\n    machineconfiguration.openshift.io/role: worker\n" +
		"spec:\n  config:\n    ignition:\n      version: 3.5.0\n    storage:\n      files:\n      - path: /etc/motd\n        contents:\n          source: data:,hi\n" +
		"      - path: /etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime\n        contents:\n          source: data:,%5Bcrio.runtime%5D%0Adefault_runtime%20%3D%20%22RUNTIME%22%0A\n"
	const crc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: ContainerRuntimeConfig\nmetadata:\n  name: crc\nspec:\n  containerRuntimeConfig:\n    defaultRuntime: RUNTIME\n"
	const refusal = "targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun by removing any ContainerRuntimeConfig that sets defaultRuntime to runc, and removing any MachineConfig that sets default_runtime = \"runc\" in CRI-O configuration under /etc/crio/crio.conf.d/"
	for _, tc := range []struct {
		name, data, stream string
		want               []string
	}{
		{"MachineConfig runc on rhel-10", strings.ReplaceAll(mc, "RUNTIME", "runc"), "rhel-10", []string{
			"f.yaml:16:9: error: $.spec.config.storage.files[1]: on OS image stream rhel-10: MachineConfigPool worker " + refusal}},
		{"MachineConfig runc on centos-10", strings.ReplaceAll(mc, "RUNTIME", "runc"), "centos-10", []string{
			"f.yaml:16:9: error: $.spec.config.storage.files[1]: on OS image stream centos-10: MachineConfigPool worker " + refusal}},
		{"MachineConfig runc on rhel-9", strings.ReplaceAll(mc, "RUNTIME", "runc"), "rhel-9", nil},
		{"MachineConfig runc, no stream given", strings.ReplaceAll(mc, "RUNTIME", "runc"), "", nil},
		{"MachineConfig crun on rhel-10", strings.ReplaceAll(mc, "RUNTIME", "crun"), "rhel-10", nil},
		{"ContainerRuntimeConfig runc on rhel-10", strings.ReplaceAll(crc, "RUNTIME", "runc"), "rhel-10", []string{
			"f.yaml:7:21: error: $.spec.containerRuntimeConfig.defaultRuntime: on OS image stream rhel-10: MachineConfigPool selected by ContainerRuntimeConfig crc " + refusal}},
		{"ContainerRuntimeConfig runc on rhel-9", strings.ReplaceAll(crc, "RUNTIME", "runc"), "rhel-9", nil},
		{"ContainerRuntimeConfig crun on rhel-10", strings.ReplaceAll(crc, "RUNTIME", "crun"), "rhel-10", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range FileWith("f.yaml", []byte(tc.data), Options{OSImageStream: tc.stream}) {
				if p.Severity == Error {
					got = append(got, p.String())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
