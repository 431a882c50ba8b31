package firstboot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/go-semver/semver"
	v3_0 "github.com/coreos/ignition/v2/config/v3_0"
	t3_0 "github.com/coreos/ignition/v2/config/v3_0/types"
	v3_1 "github.com/coreos/ignition/v2/config/v3_1"
	t3_1 "github.com/coreos/ignition/v2/config/v3_1/types"
	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	t3_2 "github.com/coreos/ignition/v2/config/v3_2/types"
	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	t3_3 "github.com/coreos/ignition/v2/config/v3_3/types"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"
	t3_4 "github.com/coreos/ignition/v2/config/v3_4/types"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// spec3 are the 3.x specs Encode writes: a value of the spec's config type, into which
// a config that uses nothing the spec lacks decodes strictly, and the spec's own parser,
// which validates the result as Ignition of that version will.
var spec3 = map[uint64]struct {
	typ   func() any
	parse func([]byte) (report.Report, error)
}{
	0: {func() any { return new(t3_0.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_0.Parse(b); return r, err }},
	1: {func() any { return new(t3_1.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_1.Parse(b); return r, err }},
	2: {func() any { return new(t3_2.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_2.Parse(b); return r, err }},
	3: {func() any { return new(t3_3.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_3.Parse(b); return r, err }},
	4: {func() any { return new(t3_4.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_4.Parse(b); return r, err }},
	5: {func() any { return new(types.Config) }, func(b []byte) (report.Report, error) { _, r, err := v3_5.Parse(b); return r, err }},
}

// Encode writes cfg, a spec 3.5 config, as spec v. Each 3.x spec only adds fields to
// the one before, so a config that sets none of the fields the older spec lacks is the
// same config in it; one that does is refused with the field's path (MCO's converter
// refuses the same). For 2.2, see encode22. The result is checked by the target spec's
// own Ignition parser.
func Encode(cfg types.Config, v semver.Version) ([]byte, error) {
	if v == V22 {
		return encode22(cfg)
	}
	spec, ok := spec3[uint64(v.Minor)]
	if v.Major != 3 || !ok || v.Patch != 0 || v.PreRelease != "" {
		return nil, fmt.Errorf("cannot write Ignition spec %s: this server writes 3.0 to 3.5 and 2.2", v)
	}
	cfg.Ignition.Version = v.String()
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	// Ignition's types leave empty structs in the JSON ("proxy": {}); an older spec
	// lacks some of them, and empty they say nothing.
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	tree, _ = pruneEmpty(tree)
	raw, err = json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(spec.typ()); err != nil {
		return nil, fmt.Errorf("the config cannot be written as Ignition spec %s, which lacks a field it sets (%v); the machine's boot image must support a newer spec", v, err)
	}
	if rpt, err := spec.parse(raw); err != nil {
		return nil, fmt.Errorf("the config written as Ignition spec %s is not valid: %s", v, ignconfig.Describe(rpt, err))
	}
	return raw, nil
}

// pruneEmpty removes the empty objects from a decoded JSON tree, and says whether what
// is left of v is empty.
func pruneEmpty(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			pruned, empty := pruneEmpty(e)
			if _, isMap := e.(map[string]any); isMap && empty {
				delete(x, k)
				continue
			}
			x[k] = pruned
		}
		return x, len(x) == 0
	case []any:
		for i, e := range x {
			x[i], _ = pruneEmpty(e)
		}
		return x, false
	}
	return v, false
}

// Spec 2.2, as far as Encode writes it: what a rendered config and a stub use.
type (
	config22 struct {
		Ignition ignition22 `json:"ignition"`
		Passwd   *passwd22  `json:"passwd,omitempty"`
		Storage  *storage22 `json:"storage,omitempty"`
		Systemd  *systemd22 `json:"systemd,omitempty"`
	}
	ignition22 struct {
		Config   *ignConfig22 `json:"config,omitempty"`
		Security *security22  `json:"security,omitempty"`
		Timeouts *timeouts22  `json:"timeouts,omitempty"`
		Version  string       `json:"version"`
	}
	ignConfig22 struct {
		Append  []configRef22 `json:"append,omitempty"`
		Replace *configRef22  `json:"replace,omitempty"`
	}
	configRef22 struct {
		Source       string         `json:"source"`
		Verification verification22 `json:"verification"`
	}
	verification22 struct {
		Hash *string `json:"hash,omitempty"`
	}
	security22 struct {
		TLS tls22 `json:"tls"`
	}
	tls22 struct {
		CertificateAuthorities []caRef22 `json:"certificateAuthorities,omitempty"`
	}
	caRef22 struct {
		Source       string         `json:"source"`
		Verification verification22 `json:"verification"`
	}
	timeouts22 struct {
		HTTPResponseHeaders *int `json:"httpResponseHeaders,omitempty"`
		HTTPTotal           *int `json:"httpTotal,omitempty"`
	}
	passwd22 struct {
		Users []user22 `json:"users,omitempty"`
	}
	user22 struct {
		Name              string   `json:"name"`
		PasswordHash      *string  `json:"passwordHash,omitempty"`
		SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
	}
	storage22 struct {
		Directories []directory22 `json:"directories,omitempty"`
		Files       []file22      `json:"files,omitempty"`
		Links       []link22      `json:"links,omitempty"`
	}
	node22 struct {
		Filesystem string       `json:"filesystem"`
		Path       string       `json:"path"`
		Overwrite  *bool        `json:"overwrite,omitempty"`
		User       *nodeOwner22 `json:"user,omitempty"`
		Group      *nodeOwner22 `json:"group,omitempty"`
	}
	nodeOwner22 struct {
		ID   *int   `json:"id,omitempty"`
		Name string `json:"name,omitempty"`
	}
	file22 struct {
		node22
		Contents contents22 `json:"contents"`
		Mode     *int       `json:"mode,omitempty"`
	}
	contents22 struct {
		Compression  string         `json:"compression,omitempty"`
		Source       string         `json:"source"`
		Verification verification22 `json:"verification"`
	}
	directory22 struct {
		node22
		Mode *int `json:"mode,omitempty"`
	}
	link22 struct {
		node22
		Hard   bool   `json:"hard,omitempty"`
		Target string `json:"target"`
	}
	systemd22 struct {
		Units []unit22 `json:"units,omitempty"`
	}
	unit22 struct {
		Name     string     `json:"name"`
		Enabled  *bool      `json:"enabled,omitempty"`
		Mask     bool       `json:"mask,omitempty"`
		Contents string     `json:"contents,omitempty"`
		Dropins  []dropin22 `json:"dropins,omitempty"`
	}
	dropin22 struct {
		Name     string `json:"name"`
		Contents string `json:"contents,omitempty"`
	}
)

// encode22 writes cfg as spec 2.2, for the boot images whose Ignition predates spec 3,
// as MCO's converter (ign-converter's v32tov22) does: config merge becomes append;
// files, directories and links go on the "root" filesystem; overwrite is written out
// where spec 3 leaves it unset, because the two specs' defaults differ. What spec 2.2
// cannot say, or says otherwise, is refused with its path: disks, partitions, RAID,
// filesystems, LUKS, proxies, HTTP headers, file appends, sha256 hashes, users' fields
// other than name, password hash and SSH keys, groups, and kernel arguments (Serve
// moves those into the encapsulated MachineConfig first).
func encode22(cfg types.Config) ([]byte, error) {
	var refused []string
	refuse := func(format string, args ...any) { refused = append(refused, fmt.Sprintf(format, args...)) }
	hash := func(path string, v types.Verification) verification22 {
		if v.Hash != nil && !strings.HasPrefix(*v.Hash, "sha512-") {
			refuse("%s.verification.hash: spec 2.2 verifies sha512 only", path)
		}
		return verification22{Hash: v.Hash}
	}
	ref := func(path string, r types.Resource) configRef22 {
		if len(r.HTTPHeaders) > 0 {
			refuse("%s.httpHeaders", path)
		}
		if r.Compression != nil && *r.Compression != "" {
			refuse("%s.compression", path)
		}
		return configRef22{Source: deref(r.Source), Verification: hash(path, r.Verification)}
	}
	out := config22{Ignition: ignition22{Version: V22.String()}}
	ig := cfg.Ignition
	if len(ig.Config.Merge) > 0 || ig.Config.Replace.Source != nil {
		out.Ignition.Config = &ignConfig22{}
		for i, m := range ig.Config.Merge {
			out.Ignition.Config.Append = append(out.Ignition.Config.Append, ref(fmt.Sprintf("ignition.config.merge[%d]", i), m))
		}
		if ig.Config.Replace.Source != nil {
			r := ref("ignition.config.replace", ig.Config.Replace)
			out.Ignition.Config.Replace = &r
		}
	}
	if ig.Proxy.HTTPProxy != nil || ig.Proxy.HTTPSProxy != nil || len(ig.Proxy.NoProxy) > 0 {
		refuse("ignition.proxy")
	}
	if cas := ig.Security.TLS.CertificateAuthorities; len(cas) > 0 {
		out.Ignition.Security = &security22{}
		for i, ca := range cas {
			r := ref(fmt.Sprintf("ignition.security.tls.certificateAuthorities[%d]", i), ca)
			out.Ignition.Security.TLS.CertificateAuthorities = append(out.Ignition.Security.TLS.CertificateAuthorities, caRef22(r))
		}
	}
	if ig.Timeouts.HTTPResponseHeaders != nil || ig.Timeouts.HTTPTotal != nil {
		out.Ignition.Timeouts = &timeouts22{HTTPResponseHeaders: ig.Timeouts.HTTPResponseHeaders, HTTPTotal: ig.Timeouts.HTTPTotal}
	}
	if len(cfg.KernelArguments.ShouldExist) > 0 || len(cfg.KernelArguments.ShouldNotExist) > 0 {
		refuse("kernelArguments")
	}
	if len(cfg.Passwd.Groups) > 0 {
		refuse("passwd.groups")
	}
	for i, u := range cfg.Passwd.Users {
		if u.Gecos != nil || len(u.Groups) > 0 || u.HomeDir != nil || u.NoCreateHome != nil || u.NoLogInit != nil ||
			u.NoUserGroup != nil || u.PrimaryGroup != nil || u.Shell != nil || u.ShouldExist != nil || u.System != nil || u.UID != nil {
			refuse("passwd.users[%d] (%s): only name, passwordHash and sshAuthorizedKeys", i, u.Name)
		}
		if out.Passwd == nil {
			out.Passwd = &passwd22{}
		}
		nu := user22{Name: u.Name, PasswordHash: u.PasswordHash}
		for _, k := range u.SSHAuthorizedKeys {
			nu.SSHAuthorizedKeys = append(nu.SSHAuthorizedKeys, string(k))
		}
		out.Passwd.Users = append(out.Passwd.Users, nu)
	}
	st := cfg.Storage
	for _, what := range []struct {
		name string
		n    int
	}{{"storage.disks", len(st.Disks)}, {"storage.raid", len(st.Raid)}, {"storage.filesystems", len(st.Filesystems)}, {"storage.luks", len(st.Luks)}} {
		if what.n > 0 {
			refuse("%s", what.name)
		}
	}
	node := func(n types.Node) node22 {
		// Spec 3 leaves an unset overwrite false; spec 2.2 takes it as true for files.
		o := node22{Filesystem: "root", Path: n.Path, Overwrite: ptrOr(n.Overwrite, false)}
		if n.User.ID != nil || n.User.Name != nil {
			o.User = &nodeOwner22{ID: n.User.ID, Name: deref(n.User.Name)}
		}
		if n.Group.ID != nil || n.Group.Name != nil {
			o.Group = &nodeOwner22{ID: n.Group.ID, Name: deref(n.Group.Name)}
		}
		return o
	}
	if len(st.Files)+len(st.Directories)+len(st.Links) > 0 {
		out.Storage = &storage22{}
	}
	for i, f := range st.Files {
		p := fmt.Sprintf("storage.files[%d] (%s)", i, f.Path)
		if len(f.Append) > 0 {
			refuse("%s.append", p)
		}
		if len(f.Contents.HTTPHeaders) > 0 {
			refuse("%s.contents.httpHeaders", p)
		}
		c := contents22{Compression: deref(f.Contents.Compression), Source: deref(f.Contents.Source), Verification: hash(p+".contents", f.Contents.Verification)}
		if f.Contents.Source == nil {
			// An empty file: spec 2.2 has no "no contents", only an empty source.
			c.Source = "data:,"
		}
		out.Storage.Files = append(out.Storage.Files, file22{node22: node(f.Node), Contents: c, Mode: f.Mode})
	}
	for _, d := range st.Directories {
		out.Storage.Directories = append(out.Storage.Directories, directory22{node22: node(d.Node), Mode: d.Mode})
	}
	for _, l := range st.Links {
		out.Storage.Links = append(out.Storage.Links, link22{node22: node(l.Node), Hard: deref(l.Hard), Target: deref(l.Target)})
	}
	for _, u := range cfg.Systemd.Units {
		if out.Systemd == nil {
			out.Systemd = &systemd22{}
		}
		nu := unit22{Name: u.Name, Enabled: u.Enabled, Mask: deref(u.Mask), Contents: deref(u.Contents)}
		for _, d := range u.Dropins {
			nu.Dropins = append(nu.Dropins, dropin22{Name: d.Name, Contents: deref(d.Contents)})
		}
		out.Systemd.Units = append(out.Systemd.Units, nu)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("the config cannot be written as Ignition spec 2.2, which cannot say %s; the machine's boot image must support spec 3", strings.Join(refused, ", "))
	}
	return json.Marshal(out)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptrOr[T any](p *T, def T) *T {
	if p != nil {
		return p
	}
	return &def
}
