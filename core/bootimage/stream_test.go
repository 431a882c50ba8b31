package bootimage_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
)

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: bootimage.ConfigMapNamespace, Name: bootimage.ConfigMapName},
		Data:       data,
	}
}

func TestStreamImages(t *testing.T) {
	s, err := bootimage.StreamFromConfigMap(configMap(map[string]string{
		bootimage.StreamKey: string(readFile(t, "stream.json")),
		"releaseVersion":    "4.18.1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "rhcos-4.18" {
		t.Errorf("stream = %q", s.Name)
	}
	for _, tt := range []struct{ arch, region, want string }{
		{"x86_64", "us-east-1", awsUSEast1},
		{"x86_64", "ap-south-1", "ami-0a4e8f1b5c2d9e367"},
		{"aarch64", "us-east-1", awsARMUSEast},
	} {
		if got, err := s.AWSImage(tt.arch, tt.region); err != nil || got != tt.want {
			t.Errorf("AWSImage(%s, %s) = %q, %v; want %q", tt.arch, tt.region, got, err, tt.want)
		}
	}
	if got, err := s.GCPImage("x86_64"); err != nil || got != gcpX86 {
		t.Errorf("GCPImage(x86_64) = %q, %v", got, err)
	}
	if got, err := s.GCPImage("aarch64"); err != nil || got != "projects/rhcos-cloud/global/images/rhcos-418-94-202502100215-0-gcp-aarch64" {
		t.Errorf("GCPImage(aarch64) = %q, %v", got, err)
	}
}

// TestBadStreamMetadata covers stream metadata that cannot be used: each error names
// the ConfigMap key, the architecture, the platform and the region concerned.
func TestBadStreamMetadata(t *testing.T) {
	for _, tt := range []struct {
		name string
		data map[string]string
		want string
	}{
		{"no stream key", map[string]string{"releaseVersion": "4.18.1"},
			`configmap openshift-machine-config-operator/coreos-bootimages has no "stream" key`},
		{"empty", map[string]string{"stream": "  "},
			`configmap openshift-machine-config-operator/coreos-bootimages key "stream": no CoreOS stream metadata: the value is empty`},
		{"not JSON", map[string]string{"stream": `{"stream": "rhcos-4.18", "architectures": {`},
			`key "stream": not CoreOS stream metadata: invalid JSON at byte`},
		{"wrong shape", map[string]string{"stream": `{"stream": "rhcos-4.18", "architectures": []}`},
			`key "stream": not CoreOS stream metadata: json: cannot unmarshal array`},
		{"no architectures", map[string]string{"stream": `{"stream": "rhcos-4.18"}`},
			`key "stream": CoreOS stream metadata has no architectures`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bootimage.StreamFromConfigMap(configMap(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}

	s, err := bootimage.ParseStream([]byte(`{
		"stream": "rhcos-4.18",
		"architectures": {
			"x86_64": {"images": {
				"aws": {"regions": {"us-east-1": {"release": "418", "image": ""}, "us-west-2": {"release": "418", "image": "ami-1"}}},
				"gcp": {"release": "418", "project": "", "name": "rhcos-418"}
			}},
			"aarch64": {"images": {"gcp": {"release": "418", "project": "rhcos-cloud"}}},
			"s390x": {"images": {}}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		lookup   func() (string, error)
		want     string
		noRegion bool
	}{
		{"unknown architecture", func() (string, error) { return s.AWSImage("ppc64le", "us-east-1") },
			`stream metadata "rhcos-4.18": architectures: no ppc64le (the stream has aarch64, s390x, x86_64)`, false},
		{"no AWS images", func() (string, error) { return s.AWSImage("aarch64", "us-east-1") },
			`stream metadata "rhcos-4.18": architectures.aarch64.images.aws: no AWS images`, false},
		{"region not covered", func() (string, error) { return s.AWSImage("x86_64", "eu-south-3") },
			`stream metadata "rhcos-4.18": architectures.x86_64.images.aws.regions: no region eu-south-3 (no AMI for the region; the stream covers us-east-1, us-west-2)`, true},
		{"empty AMI", func() (string, error) { return s.AWSImage("x86_64", "us-east-1") },
			`stream metadata "rhcos-4.18": architectures.x86_64.images.aws.regions.us-east-1.image is empty`, false},
		{"no region given", func() (string, error) { return s.AWSImage("x86_64", "") },
			`architectures.x86_64.images.aws: no region to look up (providerSpec.value.placement.region is empty)`, false},
		{"no GCP image", func() (string, error) { return s.GCPImage("s390x") },
			`stream metadata "rhcos-4.18": architectures.s390x.images.gcp: no GCP image`, false},
		{"empty GCP project", func() (string, error) { return s.GCPImage("x86_64") },
			`stream metadata "rhcos-4.18": architectures.x86_64.images.gcp.project is empty`, false},
		{"empty GCP name", func() (string, error) { return s.GCPImage("aarch64") },
			`stream metadata "rhcos-4.18": architectures.aarch64.images.gcp.name is empty`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lookup()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, bootimage.ErrNoRegionImage) != tt.noRegion {
				t.Errorf("errors.Is(err, ErrNoRegionImage) = %t, want %t", !tt.noRegion, tt.noRegion)
			}
		})
	}
}
