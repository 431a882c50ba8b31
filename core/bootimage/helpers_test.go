package bootimage_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/bootimage"
)

// Targets in testdata/stream.json.
const (
	awsUSEast1   = "ami-0e5d1a7b2c8f3e496"
	awsARMUSEast = "ami-0b1c9e0b3c5a8d4f2"
	gcpX86       = "projects/rhcos-cloud/global/images/rhcos-418-94-202502100215-0-gcp-x86-64"
	// The images the MachineSets in testdata boot.
	awsOldAMI   = "ami-0fe05b1aa8dacfa90"
	gcpOldImage = "projects/rhcos-cloud/global/images/rhcos-412-85-202203181601-0-gcp-x86-64"
)

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadStream(t *testing.T) *bootimage.Stream {
	t.Helper()
	s, err := bootimage.ParseStream(readFile(t, "stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func loadMachineSet(t *testing.T, name string) *machinev1beta1.MachineSet {
	t.Helper()
	var ms machinev1beta1.MachineSet
	if err := yaml.UnmarshalStrict(readFile(t, name), &ms); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &ms
}

func awsMachineSet(t *testing.T) *machinev1beta1.MachineSet {
	return loadMachineSet(t, "aws-machineset.yaml")
}

func gcpMachineSet(t *testing.T) *machinev1beta1.MachineSet {
	return loadMachineSet(t, "gcp-machineset.yaml")
}

// editProviderSpec rewrites a MachineSet's providerSpec.value through generic JSON.
func editProviderSpec(t *testing.T, ms *machinev1beta1.MachineSet, edit func(v map[string]any)) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	ms.Spec.Template.Spec.ProviderSpec.Value.Raw = raw
}

// applyMergePatch applies a JSON merge patch (RFC 7386) to doc.
func applyMergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	out := map[string]any{}
	for k, v := range d {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = applyMergePatch(out[k], v)
	}
	return out
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}
