package render

import (
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// genLongData is file contents that YAML folds, quotes or escapes: long lines with
// spaces, YAML's indicators and characters JSON escapes.
var genLongData = rapid.StringMatching(`[a-z0-9 :#'"&<>%,\-]{0,120}`)

// genConflictPath includes paths that merge into a config Ignition refuses though
// every source alone is valid: a file under another source's link (/etc/l), and a
// file where a unit with contents is written (/etc/systemd/system/a.service).
var genConflictPath = rapid.SampledFrom([]string{"/etc/motd", "/etc/l", "/etc/l/f.conf", "/etc/systemd/system/a.service", "/var/lib/x"})

// genItemsConfig draws a valid config of files (long contents), links and units
// whose merges with others may conflict.
func genItemsConfig() *rapid.Generator[types.Config] {
	return rapid.Custom(func(t *rapid.T) types.Config {
		cfg := ignconfig.Empty()
		for _, p := range rapid.SliceOfNDistinct(genConflictPath, 0, 4, func(p string) string { return p }).Draw(t, "paths") {
			if p == "/etc/l" && rapid.Bool().Draw(t, "link") {
				target := "/usr/share/l"
				cfg.Storage.Links = append(cfg.Storage.Links, types.Link{Node: types.Node{Path: p}, LinkEmbedded1: types.LinkEmbedded1{Target: &target}})
				continue
			}
			if strings.HasPrefix(p, "/etc/l/") && len(cfg.Storage.Links) > 0 {
				continue // a single config with both is invalid on its own
			}
			src := "data:," + url.PathEscape(genLongData.Draw(t, "data"))
			mode := genMode.Draw(t, "mode")
			cfg.Storage.Files = append(cfg.Storage.Files, types.File{Node: types.Node{Path: p, Overwrite: rapid.Ptr(rapid.Bool(), true).Draw(t, "overwrite")},
				FileEmbedded1: types.FileEmbedded1{Mode: &mode, Contents: types.Resource{Source: &src}}})
		}
		units := rapid.SliceOfNDistinct(genUnit(), 0, 2, func(u types.Unit) string { return u.Name }).Draw(t, "units")
		for _, u := range units {
			if u.Contents != nil && rapid.Bool().Draw(t, "long description") {
				c := "[Unit]\nDescription=" + genLongData.Draw(t, "description") + " " + genLongData.Draw(t, "more") + "\n"
				u.Contents = &c
			}
			if u.Name == "a.service" && u.Contents != nil && slicesContainsPath(cfg.Storage.Files, "/etc/systemd/system/a.service") {
				continue
			}
			cfg.Systemd.Units = append(cfg.Systemd.Units, u)
		}
		return cfg
	})
}

func slicesContainsPath(files []types.File, p string) bool {
	for _, f := range files {
		if f.Path == p {
			return true
		}
	}
	return false
}

// TestCacheNamesAndValidatesAsRender: a Cache's render, which validates and names
// the merged config from what it knows of each file and unit, gives exactly Render's
// rendered config (name included) or error, on configs with contents YAML folds and
// quotes and with merges Ignition refuses; each draw renders twice through a cache
// shared by every draw, so that items are met again, in other configs too.
func TestCacheNamesAndValidatesAsRender(t *testing.T) {
	c := NewCache()
	pool := newPool("infra", roleSelector("worker", "infra"))
	var names, refusals int
	rapid.Check(t, func(t *rapid.T) {
		mcs := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) *mcfgv1.MachineConfig {
			raw, err := marshalConfig(genItemsConfig().Draw(t, "config"))
			if err != nil {
				t.Fatal(err)
			}
			return &mcfgv1.MachineConfig{
				ObjectMeta: metav1.ObjectMeta{
					Name:   rapid.StringMatching(`[0-9]{2}-[a-z]{1,3}`).Draw(t, "name"),
					Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: rapid.SampledFrom([]string{"worker", "infra"}).Draw(t, "role")},
				},
				Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
			}
		}), 1, 6, func(mc *mcfgv1.MachineConfig) string { return mc.Name }).Draw(t, "mcs")
		want, wantErr := Render(pool, mcs)
		for i := range 2 {
			got, err := c.Render(pool, mcs)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("render %d through the cache: error %v, want %v", i, err, wantErr)
			}
			if err != nil {
				continue
			}
			g, _ := yaml.Marshal(got)
			w, _ := yaml.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("render %d through the cache:\n%s\nwant\n%s", i, g, w)
			}
		}
		if wantErr != nil {
			refusals++
		} else {
			names++
		}
	})
	// The check that the draws meet both outcomes.
	if names == 0 || refusals == 0 {
		t.Errorf("%d draws rendered and %d were refused; the generator must give both", names, refusals)
	}
}

// TestCacheNamesAsName: the name from the cache's YAML of the items is Name's, for a
// config whose unit contents YAML folds over several lines, with long contents and a
// path YAML quotes, and the cache did name it so (the test of the
// fast path, not of a fallback to Name).
func TestCacheNamesAsName(t *testing.T) {
	long := "data:;base64," + strings.Repeat("bG9uZ2xv", 20)
	cfg := ignconfig.Empty()
	for _, p := range []string{"/etc/a", "/etc/a b/c: d"} {
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{Node: types.Node{Path: p}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &long}}})
	}
	enabled := true
	unit := "[Unit]\nDescription=" + strings.Repeat("a long line that YAML could fold ", 5) + "\n\n[Service]\nExecStart=/bin/true\n"
	cfg.Systemd.Units = []types.Unit{{Name: "x.service", Enabled: &enabled, Contents: &unit}, {Name: "y.service", Enabled: &enabled}}
	raw, err := marshalConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc := newMC("00-infra", "infra", func(mc *mcfgv1.MachineConfig) { mc.Spec.Config = runtime.RawExtension{Raw: raw} })
	pool := newPool("infra", roleSelector("infra"))
	want, err := Render(pool, []*mcfgv1.MachineConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	r := &renderer{parse: NewCache().parse, items: NewCache()}
	spec, _, err := merge([]*mcfgv1.MachineConfig{mc}, Defaults{}, r)
	if err != nil {
		t.Fatal(err)
	}
	name, ok := r.name("infra", spec)
	if !ok {
		t.Fatal("the cache did not name the config")
	}
	if name != want.Config.Name {
		t.Errorf("name %s, want %s", name, want.Config.Name)
	}
	// The check that YAML folded the unit's contents over several lines, at a width
	// that counts the item's indentation.
	y, _ := yaml.Marshal(spec)
	if !strings.Contains(string(y), "a long line\n") {
		t.Errorf("the unit's contents are not folded in the spec's YAML:\n%s", y)
	}
}
