package render

import (
	"bytes"
	"crypto/md5" //nolint:gosec // MCO's name hash; compatibility, not security.
	"fmt"
	"reflect"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	igvalidate "github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/path"
	vvalidate "github.com/coreos/vcontext/validate"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// renderer is one render's way of parsing sources and, when it has a Cache, of
// validating and naming the merged config from what the cache knows of its items.
//
// A rendered config is mostly its storage files and systemd units, and a pool whose
// one MachineConfig changed renders to a config whose items are nearly all the ones
// of the last render. Validating the merged config and encoding it as YAML for its
// name went over every item again: 85% of such a render. With a cache, both are
// done per item, each item known by its JSON encoding, and only for items not seen
// before; the rest of the config is small and is done in full. Both give exactly the
// answer of the whole: the property tests compare them on random configs.
type renderer struct {
	parse parseFunc
	items *Cache // nil: validate and name the whole config, as Render does

	// What valid encoded, for merge and newRendered: the merged config and where its
	// files and units are in it.
	raw          []byte
	files, units listSpans
}

// itemInfo is what a Cache knows of one storage file or systemd unit, by its JSON.
type itemInfo struct {
	fatal bool   // Ignition's validation of the item alone has an error
	yaml  []byte // the item's YAML in a rendered spec's name hash; nil until needed
}

// valid reports whether Ignition's validation of out (validate.ValidateWithContext)
// finds no error, from the cache's verdicts on out's files and units where it has
// them. false when it finds one, and when the renderer has no cache: the caller
// then validates out in full, for the report.
//
// vcontext's validation walks the config and calls, at each struct, its Validate
// method and Ignition's duplicate-key check (ValidateDups). The calls inside a file
// or a unit see only that item, so an item's verdict is its own, whatever else the
// config holds. The calls at the structs that hold the lists (Config, Storage,
// Systemd: paths under links, files where units are written, duplicate keys) see
// every item; they are made here on the whole config, and cost little. Everything
// else is walked as in the whole, on the config without its files and units.
func (r *renderer) valid(out *types.Config) bool {
	if r.items == nil {
		return false
	}
	raw, files, units, err := marshalConfigSpans(*out)
	if err != nil {
		return false
	}
	r.raw, r.files, r.units = raw, files, units

	rest := *out
	rest.Storage.Files, rest.Systemd.Units = nil, nil
	if igvalidate.ValidateWithContext(rest, nil).IsFatal() {
		return false
	}
	ctx := path.New("json")
	for _, v := range []reflect.Value{reflect.ValueOf(*out), reflect.ValueOf(out.Storage), reflect.ValueOf(out.Systemd)} {
		if vvalidate.DefaultValidator(v, ctx).IsFatal() || igvalidate.ValidateDups(v, ctx).IsFatal() {
			return false
		}
	}
	check := func(kind byte, spans listSpans, item func(i int) any) bool {
		for i, sp := range spans.items {
			info := r.items.item(kind, raw[sp.start:sp.end])
			if info == nil {
				info = &itemInfo{fatal: igvalidate.ValidateWithContext(item(i), nil).IsFatal()}
				r.items.putItem(kind, raw[sp.start:sp.end], info)
			}
			if info.fatal {
				return false
			}
		}
		return true
	}
	return len(files.items) == len(out.Storage.Files) && len(units.items) == len(out.Systemd.Units) &&
		check('f', files, func(i int) any { return out.Storage.Files[i] }) &&
		check('u', units, func(i int) any { return out.Systemd.Units[i] })
}

// newRendered is New, with the name from the cache's YAML of the files and units
// when valid encoded the config (see name).
func (r *renderer) newRendered(poolName string, spec mcfgv1.MachineConfigSpec) (*mcfgv1.MachineConfig, error) {
	if r.raw == nil || poolName == "" {
		return New(poolName, spec)
	}
	name, ok := r.name(poolName, spec)
	if !ok {
		return New(poolName, spec)
	}
	return &mcfgv1.MachineConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}, nil
}

// placeholder stands for a list of items in the YAML of a spec, on a line of its own
// that name replaces with the items' YAML. A config that holds the string anywhere is
// named the slow way.
const placeholder = "mcotui-render-placeholder-5b0d2c"

// Where the files and units of a rendered config are in its spec's YAML, as
// sigs.k8s.io/yaml writes it (sorted keys, lists not indented under their key): the
// lines that introduce the list, and the line a one-item list of the placeholder is.
var (
	filesPrefix = "config:\n  storage:\n    files:\n"
	unitsPrefix = "config:\n  systemd:\n    units:\n"
	filesLine   = "    - path: " + placeholder + "\n"
	unitsLine   = "    - name: " + placeholder + "\n"
)

// name is Name(poolName, spec) for the config valid encoded, with the YAML of each
// file and unit from the cache: the YAML of the spec with each list replaced by a
// placeholder item, in which the placeholder's line is replaced by the items' YAML.
// An item's YAML is a block of lines that depends on the item and on how deep the
// list sits, which is always the same, and a list's YAML is its items' one after the
// other, so this is the very text Name hashes (TestCacheNamesAsName). ok is false
// when the spec cannot be named this way; the caller keeps Name's.
func (r *renderer) name(poolName string, spec mcfgv1.MachineConfigSpec) (string, bool) {
	raw := r.raw
	if len(r.files.items) == 0 || bytes.Contains(raw, []byte(placeholder)) {
		return "", false
	}
	// The placeholders go in from the end, so that the earlier spans stay right.
	lists := []struct {
		kind       byte
		spans      listSpans
		item, line string
		prefix     string
	}{
		{'F', r.files, `[{"path":"` + placeholder + `"}]`, filesLine, filesPrefix},
		{'U', r.units, `[{"name":"` + placeholder + `"}]`, unitsLine, unitsPrefix},
	}
	if len(r.units.items) == 0 {
		lists = lists[:1]
	} else if r.units.whole.start < r.files.whole.start {
		return "", false
	}
	withPlaceholders := raw
	for i := len(lists) - 1; i >= 0; i-- {
		l := lists[i]
		withPlaceholders = slices3(withPlaceholders[:l.spans.whole.start:l.spans.whole.start], []byte(l.item), withPlaceholders[l.spans.whole.end:])
	}
	spec.Config.Raw = withPlaceholders
	data, err := yaml.Marshal(spec)
	if err != nil {
		return "", false
	}
	var out bytes.Buffer
	out.Grow(len(data) + len(raw))
	for _, l := range lists {
		at := bytes.Index(data, []byte(l.line))
		if at < 0 || bytes.Count(data, []byte(l.line)) != 1 {
			return "", false
		}
		out.Write(data[:at])
		for _, sp := range l.spans.items {
			y, ok := r.itemYAML(l.kind, raw[sp.start:sp.end], l.prefix)
			if !ok {
				return "", false
			}
			out.Write(y)
		}
		data = data[at+len(l.line):]
	}
	out.Write(data)
	h := md5.New() //nolint:gosec // see the import
	h.Write(salt)
	h.Write(out.Bytes())
	return fmt.Sprintf("%s%x", PoolPrefix(poolName), h.Sum(nil)), true
}

// itemYAML is the YAML of the item whose JSON is item in its list of a spec: the
// YAML of a spec that holds only it, without the lines that lead to its list.
func (r *renderer) itemYAML(kind byte, item []byte, prefix string) ([]byte, bool) {
	if info := r.items.item(kind, item); info != nil {
		return info.yaml, true
	}
	var doc bytes.Buffer
	switch kind {
	case 'F':
		doc.WriteString(`{"config":{"storage":{"files":[`)
	case 'U':
		doc.WriteString(`{"config":{"systemd":{"units":[`)
	}
	doc.Write(item)
	doc.WriteString(`]}}}`)
	y, err := yaml.JSONToYAML(doc.Bytes())
	if err != nil || !bytes.HasPrefix(y, []byte(prefix)) {
		return nil, false
	}
	info := &itemInfo{yaml: y[len(prefix):]}
	r.items.putItem(kind, item, info)
	return info.yaml, true
}

// slices3 is a, b and c one after the other, in a new slice.
func slices3(a, b, c []byte) []byte {
	out := make([]byte, 0, len(a)+len(b)+len(c))
	return append(append(append(out, a...), b...), c...)
}
