package configdiff

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestRegistriesConfDecodes: the embedded endpoint's fields are read, as
// sysregistriesv2's embedded Endpoint is.
func TestRegistriesConfDecodes(t *testing.T) {
	var c registriesConf
	_, err := toml.Decode(`
unqualified-search-registries = ["a.io"]
short-name-mode = "enforcing"
[[registry]]
prefix = "p.io"
location = "l.io/x"
insecure = true
mirror-by-digest-only = true
[[registry.mirror]]
location = "m.io/x"
pull-from-mirror = "digest-only"
`, &c)
	if err != nil {
		t.Fatal(err)
	}
	want := registriesConf{
		UnqualifiedSearchRegistries: []string{"a.io"},
		Registries: []registry{{Prefix: "p.io", endpoint: endpoint{Location: "l.io/x", Insecure: true}, MirrorByDigestOnly: true,
			Mirrors: []endpoint{{Location: "m.io/x", PullFromMirror: "digest-only"}}}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
}
