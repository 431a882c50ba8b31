package bootimage_test

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/bootimage"
)

func TestInferPlatform(t *testing.T) {
	aws, gcp := awsMachineSet(t), gcpMachineSet(t)
	other := aws.DeepCopy()
	other.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"kind":"AzureMachineProviderSpec"}`)}
	none := aws.DeepCopy()
	none.Spec.Template.Spec.ProviderSpec.Value = nil
	for _, tc := range []struct {
		name string
		in   []*machinev1beta1.MachineSet
		want configv1.PlatformType
	}{
		{"no MachineSets", nil, ""},
		{"AWS", []*machinev1beta1.MachineSet{aws, aws}, configv1.AWSPlatformType},
		{"GCP", []*machinev1beta1.MachineSet{gcp}, configv1.GCPPlatformType},
		{"AWS and GCP disagree", []*machinev1beta1.MachineSet{aws, gcp}, ""},
		{"another platform among AWS", []*machinev1beta1.MachineSet{aws, other}, ""},
		{"no providerSpec", []*machinev1beta1.MachineSet{none}, ""},
	} {
		if got := bootimage.InferPlatform(tc.in); got != tc.want {
			t.Errorf("%s: InferPlatform = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestClusterPlatform: Infrastructure's platform wins over what the MachineSets name;
// without one, the MachineSets decide.
func TestClusterPlatform(t *testing.T) {
	aws := []*machinev1beta1.MachineSet{awsMachineSet(t)}
	if got := bootimage.ClusterPlatform(configv1.GCPPlatformType, aws); got != configv1.GCPPlatformType {
		t.Errorf("Infrastructure GCP with AWS MachineSets: %q, want GCP", got)
	}
	if got := bootimage.ClusterPlatform("", aws); got != configv1.AWSPlatformType {
		t.Errorf("no Infrastructure, AWS MachineSets: %q, want AWS", got)
	}
	if got := bootimage.ClusterPlatform("", nil); got != "" {
		t.Errorf("no Infrastructure, no MachineSets: %q, want none", got)
	}
}

func TestDefaultArch(t *testing.T) {
	node := func(role, arch string) *corev1.Node {
		labels := map[string]string{}
		if role != "" {
			labels["node-role.kubernetes.io/"+role] = ""
		}
		if arch != "" {
			labels[corev1.LabelArchStable] = arch
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  string
	}{
		{"no nodes", nil, ""},
		{"single architecture", []*corev1.Node{node("master", "amd64"), node("worker", "amd64")}, "x86_64"},
		// MCO takes the control plane's architecture as the cluster's.
		{"control plane wins over other workers", []*corev1.Node{node("master", "amd64"), node("worker", "arm64"), node("worker", "arm64")}, "x86_64"},
		{"control-plane label", []*corev1.Node{node("control-plane", "arm64"), node("worker", "amd64")}, "aarch64"},
		{"control plane of two architectures", []*corev1.Node{node("master", "amd64"), node("master", "arm64")}, ""},
		{"no control plane: all nodes agree", []*corev1.Node{node("worker", "s390x"), node("", "s390x")}, "s390x"},
		{"no control plane: workers disagree", []*corev1.Node{node("worker", "amd64"), node("worker", "arm64")}, ""},
		{"unknown architecture", []*corev1.Node{node("worker", "riscv64")}, ""},
	} {
		if got := bootimage.DefaultArch(tc.nodes); got != tc.want {
			t.Errorf("%s: DefaultArch = %q, want %q", tc.name, got, tc.want)
		}
	}
}
