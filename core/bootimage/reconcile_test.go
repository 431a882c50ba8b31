package bootimage_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

var (
	aws = bootimage.Options{Platform: configv1.AWSPlatformType, DefaultArch: "x86_64"}
	gcp = bootimage.Options{Platform: configv1.GCPPlatformType, DefaultArch: "x86_64"}
)

func reconcile(t *testing.T, ms *machinev1beta1.MachineSet, opts bootimage.Options) bootimage.Result {
	t.Helper()
	r, err := bootimage.Reconcile(ms, loadStream(t), opts)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return r
}

// checkPatch applies the result's merge patch to the MachineSet and checks that it
// yields exactly the result's providerSpec, and that it changes want and nothing else.
func checkPatch(t *testing.T, ms *machinev1beta1.MachineSet, r bootimage.Result, wantPatch string, edit func(v map[string]any)) {
	t.Helper()
	if r.Outcome != bootimage.Patch {
		t.Fatalf("outcome = %s (%s), want Patch", r.Outcome, r.Skip.Message)
	}
	if got, want := decodeJSON(t, r.Patch), decodeJSON(t, []byte(wantPatch)); !reflect.DeepEqual(got, want) {
		t.Errorf("patch:\n got %s\nwant %s", r.Patch, wantPatch)
	}
	raw, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	patched := applyMergePatch(decodeJSON(t, raw), decodeJSON(t, r.Patch))
	gotValue := patched.(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["providerSpec"].(map[string]any)["value"]
	if want := decodeJSON(t, r.ProviderSpec); !reflect.DeepEqual(gotValue, want) {
		t.Errorf("patched providerSpec.value = %v\nResult.ProviderSpec = %v", gotValue, want)
	}
	want := decodeJSON(t, ms.Spec.Template.Spec.ProviderSpec.Value.Raw).(map[string]any)
	edit(want)
	if !reflect.DeepEqual(gotValue, any(want)) {
		t.Errorf("patched providerSpec.value = %v\nwant %v", gotValue, want)
	}
}

func TestReconcileAWS(t *testing.T) {
	ms := awsMachineSet(t)
	r := reconcile(t, ms, aws)
	checkPatch(t, ms, r,
		`{"spec":{"template":{"spec":{"providerSpec":{"value":{"ami":{"id":"`+awsUSEast1+`"}}}}}}}`,
		func(v map[string]any) { v["ami"] = map[string]any{"id": awsUSEast1} })
	if r.Current != awsOldAMI || r.Target != awsUSEast1 || r.Arch != "x86_64" || r.UserDataSecret != "worker-user-data" {
		t.Errorf("result = %+v", r)
	}
}

func TestReconcileAWSDropsARNAndFilters(t *testing.T) {
	ms := awsMachineSet(t)
	editProviderSpec(t, ms, func(v map[string]any) {
		v["ami"] = map[string]any{"id": awsOldAMI, "arn": "arn:aws:ec2:us-east-1::image/" + awsOldAMI}
	})
	checkPatch(t, ms, reconcile(t, ms, aws),
		`{"spec":{"template":{"spec":{"providerSpec":{"value":{"ami":{"id":"`+awsUSEast1+`","arn":null}}}}}}}`,
		func(v map[string]any) { v["ami"] = map[string]any{"id": awsUSEast1} })
}

func TestReconcileAWSArchitecture(t *testing.T) {
	ms := awsMachineSet(t)
	ms.Annotations[bootimage.ArchAnnotation] = "kubernetes.io/arch=arm64,topology.ebs.csi.aws.com/zone=us-east-1a"
	r := reconcile(t, ms, aws)
	if r.Arch != "aarch64" || r.Target != awsARMUSEast || r.Outcome != bootimage.Patch {
		t.Errorf("result = %+v, want a patch to the aarch64 AMI %s", r, awsARMUSEast)
	}
	// Without the annotation, the cluster's architecture applies.
	delete(ms.Annotations, bootimage.ArchAnnotation)
	if r := reconcile(t, ms, bootimage.Options{Platform: configv1.AWSPlatformType, DefaultArch: "aarch64"}); r.Target != awsARMUSEast {
		t.Errorf("default architecture: target %s, want %s", r.Target, awsARMUSEast)
	}
}

func TestReconcileGCP(t *testing.T) {
	ms := gcpMachineSet(t)
	r := reconcile(t, ms, gcp)
	// The boot disk gets the new image; the data disk is carried over unchanged, as
	// a merge patch replaces a list whole.
	checkPatch(t, ms, r, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"disks":[
		{"autoDelete":true,"boot":true,"image":"`+gcpX86+`","labels":null,"sizeGb":128,"type":"pd-ssd"},
		{"autoDelete":true,"boot":false,"image":"","labels":null,"sizeGb":256,"type":"pd-standard"}
	]}}}}}}`, func(v map[string]any) {
		v["disks"].([]any)[0].(map[string]any)["image"] = gcpX86
	})
	if r.Current != gcpOldImage || r.Target != gcpX86 || r.UserDataSecret != "worker-user-data" {
		t.Errorf("result = %+v", r)
	}
}

func TestReconcileGCPEveryBootDisk(t *testing.T) {
	ms := gcpMachineSet(t)
	editProviderSpec(t, ms, func(v map[string]any) {
		v["disks"].([]any)[1].(map[string]any)["boot"] = true
		v["disks"].([]any)[1].(map[string]any)["image"] = gcpX86
	})
	r := reconcile(t, ms, gcp)
	if r.Outcome != bootimage.Patch || r.Current != gcpOldImage {
		t.Fatalf("result = %+v", r)
	}
	editProviderSpec(t, ms, func(v map[string]any) {
		v["disks"].([]any)[0].(map[string]any)["image"] = gcpX86
	})
	if r := reconcile(t, ms, gcp); r.Outcome != bootimage.UpToDate {
		t.Errorf("both boot disks at the target: outcome %s", r.Outcome)
	}
}

func TestReconcileUpToDate(t *testing.T) {
	a := awsMachineSet(t)
	editProviderSpec(t, a, func(v map[string]any) { v["ami"] = map[string]any{"id": awsUSEast1} })
	if r := reconcile(t, a, aws); r.Outcome != bootimage.UpToDate || r.Patch != nil || r.Current != awsUSEast1 {
		t.Errorf("AWS: %+v", r)
	}
	g := gcpMachineSet(t)
	editProviderSpec(t, g, func(v map[string]any) { v["disks"].([]any)[0].(map[string]any)["image"] = gcpX86 })
	if r := reconcile(t, g, gcp); r.Outcome != bootimage.UpToDate || r.Patch != nil {
		t.Errorf("GCP: %+v", r)
	}
}

func TestReconcileSkips(t *testing.T) {
	tests := []struct {
		name   string
		ms     func(t *testing.T) *machinev1beta1.MachineSet
		opts   bootimage.Options
		reason bootimage.SkipReason
		msg    string
	}{
		{"AWS custom AMI", awsMachineSet,
			bootimage.Options{Platform: configv1.AWSPlatformType, DefaultArch: "x86_64", IsRHCOSAMI: func(id string) bool { return id != awsOldAMI }},
			bootimage.SkipCustomImage, "AMI ami-0fe05b1aa8dacfa90 is not a known RHCOS AMI; a custom AMI is never replaced"},
		{"AWS AMI by filters", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			editProviderSpec(t, ms, func(v map[string]any) {
				v["ami"] = map[string]any{"filters": []any{map[string]any{"name": "tag:Name", "values": []any{"rhcos"}}}}
			})
			return ms
		}, aws, bootimage.SkipNoAMIID, "providerSpec.value.ami names no id"},
		{"AWS region the stream does not cover", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			editProviderSpec(t, ms, func(v map[string]any) { v["placement"].(map[string]any)["region"] = "eu-south-3" })
			return ms
		}, aws, bootimage.SkipNoRegionImage, `stream metadata "rhcos-4.18": architectures.x86_64.images.aws.regions: no region eu-south-3`},
		{"GCP custom image", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := gcpMachineSet(t)
			editProviderSpec(t, ms, func(v map[string]any) {
				v["disks"].([]any)[0].(map[string]any)["image"] = "projects/my-project/global/images/golden-rhcos"
			})
			return ms
		}, gcp, bootimage.SkipCustomImage, `boot disk 0 boots "projects/my-project/global/images/golden-rhcos", which is not under projects/rhcos-cloud/global/images`},
		{"GCP without a boot disk", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := gcpMachineSet(t)
			editProviderSpec(t, ms, func(v map[string]any) { v["disks"].([]any)[0].(map[string]any)["boot"] = false })
			return ms
		}, gcp, bootimage.SkipNoBootDisk, "no disk with boot: true"},
		{"owner reference", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			ms.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "md"}}
			return ms
		}, aws, bootimage.SkipOwnerReference, "owned by MachineDeployment md"},
		{"Windows", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := gcpMachineSet(t)
			ms.Spec.Template.Labels[bootimage.OSIDLabel] = bootimage.OSIDWindows
			return ms
		}, gcp, bootimage.SkipWindows, "its machines run Windows"},
		{"unsupported platform", awsMachineSet, bootimage.Options{Platform: configv1.OpenStackPlatformType, DefaultArch: "x86_64"},
			bootimage.SkipUnsupportedPlatform, `not on platform "OpenStack"`},
		{"no architecture on a multi-architecture cluster", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			delete(ms.Annotations, bootimage.ArchAnnotation)
			return ms
		}, bootimage.Options{Platform: configv1.AWSPlatformType, NoArch: "the control plane nodes have several architectures (aarch64, x86_64)"},
			bootimage.SkipNoArchitecture, "and the control plane nodes have several architectures (aarch64, x86_64); add kubernetes.io/arch="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.ms(t)
			r := reconcile(t, ms, tt.opts)
			if r.Outcome != bootimage.Skipped || r.Skip.Reason != tt.reason || r.Skip.MachineSet != ms.Name || !strings.Contains(r.Skip.Message, tt.msg) {
				t.Errorf("result = %+v, want a %s skip containing %q", r, tt.reason, tt.msg)
			}
			if r.Patch != nil {
				t.Errorf("a skipped MachineSet has a patch: %s", r.Patch)
			}
		})
	}
}

func TestReconcileErrors(t *testing.T) {
	tests := []struct {
		name   string
		ms     func(t *testing.T) *machinev1beta1.MachineSet
		opts   bootimage.Options
		stream string
		want   string
	}{
		{"no providerSpec", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			ms.Spec.Template.Spec.ProviderSpec.Value = nil
			return ms
		}, aws, "", "machineset ci-ln-77hmkpt-72292-d4pxp-worker-us-east-1a: spec.template.spec.providerSpec.value is empty"},
		{"providerSpec of another platform", gcpMachineSet, aws, "",
			"machineset ci-ln-hmy310k-72292-5f87z-worker-a: spec.template.spec.providerSpec.value is a GCPMachineProviderSpec, not the AWSMachineProviderConfig this platform needs"},
		{"providerSpec that does not decode", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := gcpMachineSet(t)
			editProviderSpec(t, ms, func(v map[string]any) { v["disks"] = "sda" })
			return ms
		}, gcp, "", "machineset ci-ln-hmy310k-72292-5f87z-worker-a: spec.template.spec.providerSpec.value is not a valid GCPMachineProviderSpec"},
		{"bad architecture annotation", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			ms.Annotations[bootimage.ArchAnnotation] = "kubernetes.io/arch=riscv64"
			return ms
		}, aws, "", "kubernetes.io/arch=riscv64 is not one of amd64, arm64, ppc64le, s390x"},
		{"architecture annotation without the arch", func(t *testing.T) *machinev1beta1.MachineSet {
			ms := awsMachineSet(t)
			ms.Annotations[bootimage.ArchAnnotation] = "topology.ebs.csi.aws.com/zone=us-east-1a"
			return ms
		}, aws, "", `has no kubernetes.io/arch label`},
		{"stream without the GCP image", gcpMachineSet, gcp,
			`{"stream": "rhcos-4.18", "architectures": {"x86_64": {"images": {"aws": {"regions": {}}}}}}`,
			`machineset ci-ln-hmy310k-72292-5f87z-worker-a: stream metadata "rhcos-4.18": architectures.x86_64.images.gcp: no GCP image`},
		{"stream without the architecture", awsMachineSet, aws,
			`{"stream": "rhcos-4.18", "architectures": {"aarch64": {"images": {}}}}`,
			`machineset ci-ln-77hmkpt-72292-d4pxp-worker-us-east-1a: stream metadata "rhcos-4.18": architectures: no x86_64 (the stream has aarch64)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := loadStream(t)
			if tt.stream != "" {
				var err error
				if stream, err = bootimage.ParseStream([]byte(tt.stream)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := bootimage.Reconcile(tt.ms(t), stream, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
