package bootimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// UserDataKey is the key of a MachineSet's user-data secret that holds its Ignition
// stub.
const UserDataKey = "userData"

// spec2Versions are the stable Ignition spec 2 versions whose stubs UpgradeStub
// converts. MCO converts 2.2.0, the version installers wrote up to OpenShift 4.5.
var spec2Versions = []string{"2.0.0", "2.1.0", "2.2.0", "2.3.0"}

// StubUpgrade is the outcome of UpgradeStub.
type StubUpgrade struct {
	// Data is the user data to store: the converted stub, or the input unchanged.
	Data []byte
	// From is the stub's Ignition version, To the version of Data.
	From, To string
	// Changed says Data differs from the input and must be written back.
	Changed bool
}

// UpgradeStub returns the Ignition stub userData of the user-data secret named secret
// in spec 3, as MCO's upgradeStubIgnitionIfRequired does before a boot image update: a
// stub whose version starts with 3 is returned unchanged; a spec 2 stub is converted to
// spec 3.5.0.
//
// A stub only points the machine at the machine-config server, so only that subset of
// spec 2 is converted: ignition.version; ignition.config.append (which becomes merge)
// and ignition.config.replace, each with source and verification.hash;
// ignition.security.tls.certificateAuthorities, likewise; ignition.timeouts; and
// empty storage, systemd, passwd and networkd sections. Anything else is refused with
// an error naming the field, to be converted by hand; so is a result Ignition itself
// rejects. Errors start with MCO's "converting ignition stub failed".
func UpgradeStub(secret string, userData []byte) (StubUpgrade, error) {
	fail := func(format string, args ...any) (StubUpgrade, error) {
		return StubUpgrade{}, fmt.Errorf("converting ignition stub failed: secret %s/%s key %s: "+format,
			append([]any{MachineAPINamespace, secret, UserDataKey}, args...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(userData))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil || top == nil {
		return fail("not an Ignition config: the value is not a JSON object")
	}
	ign, _ := top["ignition"].(map[string]any)
	version, _ := ign["version"].(string)
	if version == "" {
		return fail("not an Ignition config: no ignition.version")
	}
	if strings.HasPrefix(version, "3") {
		return StubUpgrade{Data: userData, From: version, To: version}, nil
	}
	if !slices.Contains(spec2Versions, version) {
		return fail("Ignition spec version %s is not one of %s or 3.x; rewrite the stub as spec 3", version, strings.Join(spec2Versions, ", "))
	}
	cfg, err := convertStub(top)
	if err != nil {
		return fail("spec %s: %v; only a stub (ignition.config, ignition.security.tls, ignition.timeouts) converts automatically: take the MachineSet out of boot image management (mode None or a Partial selector), rewrite userData as Ignition spec 3 by hand, then enroll it again", version, err)
	}
	out, err := ignconfig.Marshal(cfg)
	if err != nil {
		return fail("encoding the converted stub: %v", err)
	}
	if _, rpt, err := ignconfig.Parse(out); err != nil {
		return fail("the stub converted from spec %s is not valid Ignition %s: %s", version, ignconfig.Version, ignconfig.Describe(rpt, err))
	}
	return StubUpgrade{Data: out, From: version, To: ignconfig.Version, Changed: true}, nil
}

// convertStub translates the spec 2 stub subset to spec 3.5.
func convertStub(top map[string]any) (types.Config, error) {
	cfg := ignconfig.Empty()
	for _, k := range slices.Sorted(maps.Keys(top)) {
		switch k {
		case "ignition":
		case "storage", "systemd", "passwd", "networkd":
			if !isEmpty(top[k]) {
				return cfg, fmt.Errorf("field %q is not part of an Ignition stub", firstField(top[k], k))
			}
		default:
			return cfg, fmt.Errorf("field %q is not part of an Ignition stub", k)
		}
	}
	ign := top["ignition"].(map[string]any)
	if err := only(ign, "ignition", "version", "config", "security", "timeouts"); err != nil {
		return cfg, err
	}

	if c, err := object(ign["config"], "ignition.config"); err != nil {
		return cfg, err
	} else if c != nil {
		if err := only(c, "ignition.config", "append", "replace"); err != nil {
			return cfg, err
		}
		if cfg.Ignition.Config.Merge, err = resources(c["append"], "ignition.config.append"); err != nil {
			return cfg, err
		}
		if c["replace"] != nil {
			if cfg.Ignition.Config.Replace, err = resource(c["replace"], "ignition.config.replace"); err != nil {
				return cfg, err
			}
		}
	}

	if s, err := object(ign["security"], "ignition.security"); err != nil {
		return cfg, err
	} else if s != nil {
		if err := only(s, "ignition.security", "tls"); err != nil {
			return cfg, err
		}
		tls, err := object(s["tls"], "ignition.security.tls")
		if err != nil {
			return cfg, err
		}
		if err := only(tls, "ignition.security.tls", "certificateAuthorities"); err != nil {
			return cfg, err
		}
		if cfg.Ignition.Security.TLS.CertificateAuthorities, err = resources(tls["certificateAuthorities"], "ignition.security.tls.certificateAuthorities"); err != nil {
			return cfg, err
		}
	}

	if t, err := object(ign["timeouts"], "ignition.timeouts"); err != nil {
		return cfg, err
	} else if t != nil {
		if err := only(t, "ignition.timeouts", "httpResponseHeaders", "httpTotal"); err != nil {
			return cfg, err
		}
		if cfg.Ignition.Timeouts.HTTPResponseHeaders, err = seconds(t["httpResponseHeaders"], "ignition.timeouts.httpResponseHeaders"); err != nil {
			return cfg, err
		}
		if cfg.Ignition.Timeouts.HTTPTotal, err = seconds(t["httpTotal"], "ignition.timeouts.httpTotal"); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// resources converts a spec 2 list of {source, verification}.
func resources(v any, path string) ([]types.Resource, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("field %q is not a list", path)
	}
	out := make([]types.Resource, 0, len(list))
	for i, item := range list {
		r, err := resource(item, fmt.Sprintf("%s.%d", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// resource converts a spec 2 {source, verification: {hash}}; spec 3 reads the same.
func resource(v any, path string) (types.Resource, error) {
	m, err := object(v, path)
	if err != nil {
		return types.Resource{}, err
	}
	if err := only(m, path, "source", "verification"); err != nil {
		return types.Resource{}, err
	}
	src, _ := m["source"].(string)
	if src == "" {
		return types.Resource{}, fmt.Errorf("field %q is missing or empty", path+".source")
	}
	r := types.Resource{Source: &src}
	ver, err := object(m["verification"], path+".verification")
	if err != nil || ver == nil {
		return r, err
	}
	if err := only(ver, path+".verification", "hash"); err != nil {
		return types.Resource{}, err
	}
	switch h := ver["hash"].(type) {
	case nil:
	case string:
		r.Verification.Hash = &h
	default:
		return types.Resource{}, fmt.Errorf("field %q is not a string", path+".verification.hash")
	}
	return r, nil
}

func seconds(v any, path string) (*int, error) {
	if v == nil {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("field %q is not a number", path)
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<31-1 {
		return nil, fmt.Errorf("field %q is not a whole number of seconds", path)
	}
	s := int(i)
	return &s, nil
}

// object returns v as a JSON object; nil stays nil.
func object(v any, path string) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("field %q is not an object", path)
	}
	return m, nil
}

// only refuses the first member of m, in sorted order, that is not allowed.
func only(m map[string]any, path string, allowed ...string) error {
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	field := extra[0]
	if path != "" {
		field = path + "." + field
	}
	return fmt.Errorf("field %q is not part of an Ignition stub", field)
}

// isEmpty reports whether a section is absent, null or an object whose members are all
// empty (spec 2 stubs carry "storage": {} and the like).
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, member := range x {
			if !isEmpty(member) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

// firstField names the first non-empty member of a section, for the error.
func firstField(v any, path string) string {
	m, ok := v.(map[string]any)
	if !ok {
		return path
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !isEmpty(m[k]) {
			return firstField(m[k], path+"."+k)
		}
	}
	return path
}
