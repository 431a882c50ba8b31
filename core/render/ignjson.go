package render

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// marshalConfig encodes cfg as MCO encodes a rendered Ignition config. MCO marshals with
// github.com/clarketm/json, a fork of encoding/json that differs in one rule: a field
// tagged omitempty whose value is a struct is left out when every exported field of
// that struct is empty, recursively. Ignition's types are full of such fields, so
// encoding/json would write an empty config as
//
//	{"ignition":{"config":{"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.5.0"},"kernelArguments":{},"passwd":{},"storage":{},"systemd":{}}
//
// where MCO writes {"ignition":{"version":"3.5.0"}}, and the rendered name would differ
// from MCO's. The fork cannot be fetched from the module proxy, so this is the same
// rule over encoding/json's encoding of scalars.
//
// Ignition's types are plain data: structs (some embedded, without tags), pointers,
// slices, strings, integers and booleans. That is all this encoder handles; anything
// else is an error, and TestIgnitionTypesAreSupported fails the build the day an
// Ignition spec brings something else. Output is deterministic: fields in declaration
// order, as encoding/json writes them, and no maps.
func marshalConfig(cfg types.Config) ([]byte, error) {
	var e encoder
	if err := e.value(reflect.ValueOf(cfg)); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// span is a range of bytes of an encoding.
type span struct{ start, end int }

// listSpans is where a list was encoded: the whole list, brackets included, and
// each item.
type listSpans struct {
	whole span
	items []span
}

// marshalConfigSpans is marshalConfig, and says where it encoded the storage files
// and the systemd units, the lists that are most of a rendered config: the encoding
// of each item is what it would be on its own, and so a key to what is known of it.
func marshalConfigSpans(cfg types.Config) (raw []byte, files, units listSpans, err error) {
	e := encoder{spans: map[reflect.Type]*listSpans{
		reflect.TypeFor[[]types.File](): &files,
		reflect.TypeFor[[]types.Unit](): &units,
	}}
	if err := e.value(reflect.ValueOf(cfg)); err != nil {
		return nil, files, units, err
	}
	return e.buf.Bytes(), files, units, nil
}

type encoder struct {
	buf bytes.Buffer
	// spans, when set, receives where the lists of these types were encoded.
	spans map[reflect.Type]*listSpans
}

func (e *encoder) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Struct:
		return e.object(v)
	case reflect.Pointer:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		return e.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		rec := e.spans[v.Type()]
		if rec != nil {
			rec.whole.start, rec.items = e.buf.Len(), make([]span, 0, v.Len())
		}
		e.buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			start := e.buf.Len()
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
			if rec != nil {
				rec.items = append(rec.items, span{start, e.buf.Len()})
			}
		}
		e.buf.WriteByte(']')
		if rec != nil {
			rec.whole.end = e.buf.Len()
		}
		return nil
	case reflect.String:
		// encoding/json's string encoding, HTML escaping included, as both libraries
		// escape by default. The hash does not see it (the YAML step re-encodes
		// strings), but the stored config then matches MCO's byte for byte.
		b, err := json.Marshal(v.String())
		if err != nil {
			return err
		}
		e.buf.Write(b)
		return nil
	case reflect.Bool:
		e.buf.WriteString(strconv.FormatBool(v.Bool()))
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf.WriteString(strconv.FormatInt(v.Int(), 10))
		return nil
	}
	return fmt.Errorf("encode Ignition config: unsupported type %s", v.Type())
}

func (e *encoder) object(v reflect.Value) error {
	fields, err := fieldsOf(v.Type())
	if err != nil {
		return err
	}
	e.buf.WriteByte('{')
	first := true
	for _, f := range fields {
		fv := v.FieldByIndex(f.index)
		if f.omitEmpty && isEmpty(fv) {
			continue
		}
		if !first {
			e.buf.WriteByte(',')
		}
		first = false
		e.buf.WriteString(f.key)
		if err := e.value(fv); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

// isEmpty is clarketm/json's isEmptyValue: encoding/json's rule, plus structs whose
// exported fields are all empty. An empty but non-nil slice is empty too.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() && !isEmpty(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return false
}

// field is one JSON member of a struct type.
type field struct {
	key       string // the quoted name and a colon, ready to write
	index     []int  // path through embedded structs, for FieldByIndex
	omitEmpty bool
}

var fieldCache sync.Map // reflect.Type -> []field

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// fieldsOf lists t's JSON members as encoding/json does for Ignition's types: exported
// fields by their tag name (or Go name), "-" skipped, untagged embedded structs
// flattened in place. Types that would need more of encoding/json (custom marshalers,
// name conflicts, the string option) are refused rather than encoded differently.
func fieldsOf(t reflect.Type) ([]field, error) {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field), nil
	}
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil, fmt.Errorf("encode Ignition config: %s has its own marshaler", t)
	}
	var fs []field
	seen := map[string]bool{}
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			// A fresh copy, so that no two fields share (and overwrite) a backing array.
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" {
				if sf.Type.Kind() != reflect.Struct {
					return fmt.Errorf("encode Ignition config: %s embeds %s, which is not a struct", t, sf.Type)
				}
				if err := walk(sf.Type, idx); err != nil {
					return err
				}
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			var omitEmpty bool
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "":
				case "omitempty":
					omitEmpty = true
				default:
					return fmt.Errorf("encode Ignition config: %s.%s has the unsupported JSON option %q", t, sf.Name, o)
				}
			}
			if seen[name] {
				return fmt.Errorf("encode Ignition config: %s has two fields named %q", t, name)
			}
			seen[name] = true
			key, err := json.Marshal(name)
			if err != nil {
				return err
			}
			fs = append(fs, field{key: string(key) + ":", index: idx, omitEmpty: omitEmpty})
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	fieldCache.Store(t, fs)
	return fs, nil
}
