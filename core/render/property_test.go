package render

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/manifest"
)

// genMCs draws MachineConfigs with distinct names for the roles a custom pool "infra"
// meets: its own, worker (which it selects too) and master (which it does not). Specs
// draw from small sets so that they collide and merge order decides.
func genMCs() *rapid.Generator[[]*mcfgv1.MachineConfig] {
	mc := rapid.Custom(func(t *rapid.T) *mcfgv1.MachineConfig {
		mc := &mcfgv1.MachineConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: Kind},
			ObjectMeta: metav1.ObjectMeta{
				Name:   rapid.StringMatching(`[0-9]{2}-[a-z]{1,3}`).Draw(t, "name"),
				Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: rapid.SampledFrom([]string{"worker", "infra", "master"}).Draw(t, "role")},
			},
		}
		s := &mc.Spec
		if rapid.Bool().Draw(t, "has config") {
			raw, err := marshalConfig(genConfig().Draw(t, "config"))
			if err != nil {
				t.Fatal(err)
			}
			s.Config = runtime.RawExtension{Raw: raw}
		}
		s.KernelArguments = rapid.SliceOfN(rapid.SampledFrom([]string{"quiet", "nosmt", "a=1", "a=2"}), 0, 3).Draw(t, "kargs")
		s.Extensions = rapid.SliceOfN(rapid.SampledFrom([]string{"usbguard", "kerberos", "kernel-devel"}), 0, 2).Draw(t, "extensions")
		s.KernelType = rapid.SampledFrom([]string{"", KernelTypeDefault, KernelTypeRealtime, KernelType64kPages}).Draw(t, "kernelType")
		s.FIPS = rapid.Bool().Draw(t, "fips")
		s.OSImageURL = rapid.SampledFrom([]string{"", "", "quay.io/os@sha256:1", "quay.io/os@sha256:2"}).Draw(t, "osImageURL")
		s.BaseOSExtensionsContainerImage = rapid.SampledFrom([]string{"", "", "quay.io/ext:1"}).Draw(t, "extensions image")
		return mc
	})
	return rapid.SliceOfNDistinct(mc, 1, 8, func(mc *mcfgv1.MachineConfig) string { return mc.Name })
}

var infraPool = &mcfgv1.MachineConfigPool{
	TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool"},
	ObjectMeta: metav1.ObjectMeta{Name: "infra"},
	Spec:       mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: roleSelector("worker", "infra")},
}

// renderDocuments decodes docs, joined as one multi-document YAML file, and renders
// the pool "infra". The result is the rendered object as YAML, its sources, or the error.
func renderDocuments(t *rapid.T, docs [][]byte) string {
	docsFile := bytes.Join(docs, []byte("---\n"))
	decoded, err := manifest.Decode("mem.yaml", docsFile)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, docsFile)
	}
	pools := manifest.Pools(decoded)
	if len(pools) != 1 {
		t.Fatalf("%d pools decoded", len(pools))
	}
	r, err := Render(pools[0], manifest.MachineConfigs(decoded))
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := yaml.Marshal(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s\nsources: %v\nwarnings: %q", out, r.Sources, r.Warnings)
}

func TestShufflingDocumentsNeverChangesTheRenderedConfig(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var docs [][]byte
		for _, obj := range append([]any{infraPool}, toAny(genMCs().Draw(t, "machineconfigs"))...) {
			b, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b)
		}
		want := renderDocuments(t, docs)
		got := renderDocuments(t, rapid.Permutation(docs).Draw(t, "shuffled"))
		if got != want {
			t.Fatalf("in document order:\n%s\nshuffled:\n%s", want, got)
		}
	})
}

func toAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestAnySpecChangeChangesTheName changes one thing in a merged spec, anything a node
// would see, and expects a new name.
func TestAnySpecChangeChangesTheName(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mcs := genMCs().Draw(t, "machineconfigs")
		for _, mc := range mcs {
			mc.Spec.Extensions = slices.DeleteFunc(mc.Spec.Extensions, func(e string) bool { return e == kernelDevel })
		}
		spec, err := MergeSpec(mcs, Defaults{})
		if err != nil {
			t.Fatal(err)
		}
		before, err := Name("infra", spec)
		if err != nil {
			t.Fatal(err)
		}
		changed, what := changeSpec(t, spec)
		after, err := Name("infra", changed)
		if err != nil {
			t.Fatal(err)
		}
		if after == before {
			t.Fatalf("%s: name stayed %s", what, before)
		}
	})
}

// changeSpec returns a copy of spec with one change, and says which.
func changeSpec(t *rapid.T, spec mcfgv1.MachineConfigSpec) (mcfgv1.MachineConfigSpec, string) {
	s := spec
	s.KernelArguments = slices.Clone(spec.KernelArguments)
	s.Extensions = slices.Clone(spec.Extensions)
	changeList := func(l []string, name string) ([]string, string) {
		switch i := rapid.IntRange(0, 2).Draw(t, name+" change"); {
		case i == 1 && len(l) > 0:
			return l[:len(l)-1], "drop the last of " + name
		case i == 2 && len(l) > 1 && l[0] != l[len(l)-1]:
			l[0], l[len(l)-1] = l[len(l)-1], l[0]
			return l, "reorder " + name
		}
		return append(l, "new"), "add to " + name
	}
	what := rapid.SampledFrom([]string{"osImageURL", "extensions image", "fips", "kernelType", "kargs", "extensions", "config"}).Draw(t, "change")
	switch what {
	case "osImageURL":
		s.OSImageURL += "x"
	case "extensions image":
		s.BaseOSExtensionsContainerImage += "x"
	case "fips":
		s.FIPS = !s.FIPS
	case "kernelType":
		others := slices.DeleteFunc([]string{KernelTypeDefault, KernelTypeRealtime, KernelType64kPages}, func(k string) bool { return k == s.KernelType })
		s.KernelType = rapid.SampledFrom(others).Draw(t, "kernel type")
	case "kargs":
		s.KernelArguments, what = changeList(s.KernelArguments, "kernelArguments")
	case "extensions":
		s.Extensions, what = changeList(s.Extensions, "extensions")
	case "config":
		cfg, _, err := ignconfig.Parse(spec.Config.Raw)
		if err != nil {
			t.Fatal(err)
		}
		what = changeConfig(t, &cfg)
		if s.Config.Raw, err = marshalConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	return s, what
}

// changeConfig makes one change to cfg that a node would see.
func changeConfig(t *rapid.T, cfg *types.Config) string {
	files := cfg.Storage.Files
	switch c := rapid.IntRange(0, 5).Draw(t, "config change"); {
	case c == 1 && len(files) > 0:
		f := &files[rapid.IntRange(0, len(files)-1).Draw(t, "file")]
		src := "data:,changed"
		if f.Contents.Source != nil && *f.Contents.Source == src {
			src += "!"
		}
		f.Contents.Source = &src
		return "change the contents of " + f.Path
	case c == 2 && len(files) > 0:
		f := &files[rapid.IntRange(0, len(files)-1).Draw(t, "file")]
		mode := 0o400
		if f.Mode != nil && *f.Mode == mode {
			mode = 0o440
		}
		f.Mode = &mode
		return "change the mode of " + f.Path
	case c == 3 && len(files) > 0:
		i := rapid.IntRange(0, len(files)-1).Draw(t, "file")
		path := files[i].Path
		cfg.Storage.Files = slices.Delete(files, i, i+1)
		return "remove " + path
	case c == 4 && len(cfg.Systemd.Units) > 0:
		u := &cfg.Systemd.Units[0]
		enabled := u.Enabled == nil || !*u.Enabled
		u.Enabled = &enabled
		return "toggle " + u.Name
	case c == 5:
		cfg.Passwd.Users = append(cfg.Passwd.Users, types.PasswdUser{Name: "new-user"})
		return "add a user"
	}
	src := "data:,"
	cfg.Storage.Files = append(files, types.File{Node: types.Node{Path: "/etc/brand-new"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}}})
	return "add a file"
}
