package disruption_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/ignconfig"
)

// registriesConfs are the registries.conf files of MCO's TestIsDrainRequired
// (pkg/daemon/drain_test.go), mc1 to mc13, byte for byte.
var registriesConfs = map[string]string{
	"mc1": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
  prefix = ""
  location = "example.com/repo/test-img"

  [[registry.mirror]]
    location = "mirror.com/repo/test-img"

[[registry]]
  prefix = ""
  location = "example.com/repo1/test-img1"

  [[registry.mirror]]
    location = "mirror.com/repo1/test-img1"
	pull-from-mirror= "digest-only"				
`,
	"mc2": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"

[[registry.mirror]]
	location = "mirror.com/repo/test-img"

[[registry]]
prefix = ""
location = "example.com/repo1/test-img1"

[[registry.mirror]]
	location = "mirror.com/repo1/test-img1"
	pull-from-mirror = "digest-only"

[[registry.mirror]]
	location = "mirror1.com/repo1/test-img1"
	pull-from-mirror = "digest-only"
`,
	"mc3": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
	prefix = ""
	location = "example.com/repo/test-img"

	[[registry.mirror]]
	location = "mirror.com/repo/test-img"
`,
	"mc4": `
unqualified-search-registries = ["example.com", "foo.com", "bar.com"]

[[registry]]
	prefix = ""
	location = "example.com/repo/test-img"

	[[registry.mirror]]
	location = "mirror.com/repo/test-img"
	pull-from-mirror = "digest-only"
`,
	"mc5": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
	prefix = ""
	location = "example.com/repo/test-img"

	[[registry.mirror]]
	location = "mirror.com/repo/test-img"
	pull-from-mirror = "digest-only"
`,
	"mc6": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"

[[registry.mirror]]
location = "mirror.com/repo/test-img"
pull-from-mirror = "digest-only"

[[registry]]
prefix = ""
location = "example.com/repo1/test-img1"
`,
	"mc7": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"

[[registry.mirror]]
location = "mirror.com/repo/test-img"
pull-from-mirror= "digest-only"

[[registry]]
prefix = ""
location = "example.com/repo1/test-img1"

[[registry.mirror]]
location = "mirror.com/repo1/test-img1"
`,
	"mc8": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = "bar.com"
location = "example.com/repo/test-img"
`,
	"mc9": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = "bar.com"
location = "example.com/repo/test-img"
blocked = true
`,
	"mc10": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
`,
	"mc11": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo1/test-img"

[[registry.mirror]]
location = "mirror.com/repo1/test-img"
pull-from-mirror= "digest-only"

[[registry]]
prefix = "bar.com"
location = "example.com/repo/test-img"
blocked = true
`,
	"mc12": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
mirror-by-digest-only = true

[[registry.mirror]]
location = "mirror.com/repo/test-img"
`,
	"mc13": `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
mirror-by-digest-only = true

[[registry.mirror]]
location = "mirror.com/repo/test-img"
[[registry.mirror]]
location = "mirror.com/repo/test-img-13"
`,
}

func registriesConfig(name string) configdiff.Config {
	src := dataurl.EncodeBytes([]byte(registriesConfs[name]))
	cfg := ignconfig.Empty()
	cfg.Storage.Files = []types.File{{
		Node:          types.Node{Path: "/etc/containers/registries.conf"},
		FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}},
	}}
	return configdiff.Config{Name: name, Ignition: cfg}
}

// TestRegistriesConfDrainAsMCO is MCO's TestIsDrainRequired, case for case, under
// MCO's default policy (registries.conf: Special, which is crio's reload): the same
// old and new configs, the same verdict on the drain.
func TestRegistriesConfDrainAsMCO(t *testing.T) {
	tests := []struct {
		why      string
		old, new string
		drain    bool
	}{
		{"no changes in registry config", "mc1", "mc1", false},
		{"only new registry added with pull-from-mirror=digest-only", "mc3", "mc1", false},
		{"only new registry added with mirror-by-digest-only set to false", "mc5", "mc6", true},
		{"one or more registry has been removed", "mc1", "mc3", true},
		{"only new mirrors got added to the registry with pull-from-mirror=digest-only", "mc1", "mc2", false},
		{"only new mirrors are added to registry with pull-from-mirror=digest-only while existing registries are unchanged", "mc9", "mc11", false},
		{"only new mirrors got added to the registry with mirror-by-digest-only set to false for registry", "mc6", "mc7", true},
		{"one or more mirror has been removed from a registry", "mc2", "mc1", true},
		{"either item from unqualified-search-registries has been removed or ordering has been changed", "mc4", "mc3", true},
		{"only additional unqualified-search-registries has been added", "mc3", "mc4", false},
		{"prefix value of one or more registry has changed", "mc8", "mc10", true},
		{"blocked value of one or more registry has changed", "mc8", "mc9", true},
		{"mirror-by-digest-only value of one or more registry has changed", "mc1", "mc6", true},
		{"only new mirror added to registry with mirror-by-digest-only set to true", "mc12", "mc13", false},
	}
	p := disruption.DefaultPolicy()
	for i, tt := range tests {
		t.Run(fmt.Sprintf("case#%d %s", i+2, tt.why), func(t *testing.T) {
			c := configdiff.Compute(registriesConfig(tt.old), registriesConfig(tt.new))
			d := disruption.Evaluate(p, c)
			if d.Drain != tt.drain {
				t.Fatalf("%s -> %s: drain %t, want %t (MCO); actions %v, registries.conf %+v, note %q", tt.old, tt.new, d.Drain, tt.drain, d.Actions, c.RegistriesConf, d.DrainNote)
			}
			if tt.old != tt.new && (len(d.Actions) != 1 || d.Actions[0] != special) {
				t.Errorf("actions %v, want [Special]", d.Actions)
			}
			if tt.old != tt.new && (d.DrainNote == "" || strings.Contains(d.DrainNote, "only adds") == tt.drain) {
				t.Errorf("drain note %q does not say why", d.DrainNote)
			}
		})
	}
}

// TestRegistriesConfWithRebootDrains is the first two cases of MCO's TestIsDrainRequired:
// a reboot among the actions drains whatever registries.conf says; a policy of None
// for it does not.
func TestRegistriesConfWithRebootDrains(t *testing.T) {
	c := configdiff.Compute(registriesConfig("mc3"), registriesConfig("mc1"))
	c.OSImageURL = &configdiff.StringChange{Old: "a", New: "b"}
	if d := disruption.Evaluate(disruption.DefaultPolicy(), c); !d.Drain {
		t.Errorf("a safe registries.conf change with an OS change: drain %t, want true", d.Drain)
	}
	c = configdiff.Compute(registriesConfig("mc1"), registriesConfig("mc3"))
	if c.RegistriesConf == nil || c.RegistriesConf.Safe || !strings.Contains(c.RegistriesConf.Reason, "registry example.com/repo1/test-img1 was removed") {
		t.Errorf("registries.conf verdict %+v, want unsafe naming the removed registry", c.RegistriesConf)
	}
}
