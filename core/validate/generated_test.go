package validate

import (
	"slices"
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
