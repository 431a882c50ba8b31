package render

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/ignconfig"
)

func ptr[T any](v T) *T { return &v }

// TestMarshalConfig pins the exact bytes for configs whose MCO encoding is known:
// empty structs left out, fields in declaration order, embedded structs flattened,
// HTML characters escaped.
func TestMarshalConfig(t *testing.T) {
	withFile := ignconfig.Empty()
	withFile.Storage.Files = []types.File{{
		Node:          types.Node{Path: "/etc/motd", Overwrite: ptr(true)},
		FileEmbedded1: types.FileEmbedded1{Mode: ptr(420), Contents: types.Resource{Source: ptr("data:,a<b>&c")}},
	}}
	withEmptyValues := ignconfig.Empty()
	withEmptyValues.Storage.Files = []types.File{} // empty but not nil: still left out
	withEmptyValues.Systemd.Units = []types.Unit{{Name: "a.service", Enabled: ptr(false), Dropins: []types.Dropin{}}}
	noVersion := types.Config{}

	tests := []struct {
		name string
		cfg  types.Config
		want string
	}{
		{"empty", ignconfig.Empty(), `{"ignition":{"version":"3.5.0"}}`},
		{"a file", withFile, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"overwrite":true,"path":"/etc/motd","contents":{"source":"data:,a\u003cb\u003e\u0026c"},"mode":420}]}}`},
		{"false pointers kept, empty slices dropped", withEmptyValues, `{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"enabled":false,"name":"a.service"}]}}`},
		// ignition has no omitempty, and version none: both stay, as in clarketm/json.
		{"zero config", noVersion, `{"ignition":{"version":""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := marshalConfig(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("marshalConfig =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestMarshalConfigIsEncodingJSONWithoutEmptyObjects checks the encoder against the
// standard library on random configs. For Ignition's types, clarketm/json's rule
// amounts to dropping every member whose value, once pruned the same way, is {}: every
// struct-typed field but "ignition" is tagged omitempty, and the structs in those
// fields have only omitempty fields themselves.
func TestMarshalConfigIsEncodingJSONWithoutEmptyObjects(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig().Draw(t, "config")
		ours, err := marshalConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		std, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatalf("our output is not JSON: %v\n%s", err, ours)
		}
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		want = pruneEmptyObjects(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("marshalConfig =\n%s\nencoding/json without empty objects =\n%v", ours, want)
		}
		// And it reads back as the same config.
		back, _, err := ignconfig.Parse(ours)
		if err != nil {
			t.Fatalf("our output does not parse: %v\n%s", err, ours)
		}
		again, _ := marshalConfig(back)
		if string(again) != string(ours) {
			t.Fatalf("round trip changed\n%s\ninto\n%s", ours, again)
		}
	})
}

func pruneEmptyObjects(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			c = pruneEmptyObjects(c)
			if m, ok := c.(map[string]any); ok && len(m) == 0 {
				delete(v, k)
				continue
			}
			v[k] = c
		}
		return v
	case []any:
		for i, c := range v {
			v[i] = pruneEmptyObjects(c)
		}
		return v
	}
	return v
}

// TestIgnitionTypesAreSupported walks every type reachable from types.Config and fails
// if an Ignition spec brings something marshalConfig does not encode as MCO does: a
// map, an interface, a float, a custom marshaler, a JSON option other than omitempty,
// or two fields with one name.
func TestIgnitionTypesAreSupported(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Struct:
			fields, err := fieldsOf(typ)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return
			}
			for _, f := range fields {
				walk(typ.FieldByIndex(f.index).Type, path+"."+f.key)
			}
		case reflect.Pointer, reflect.Slice:
			if typ.Elem().Kind() == reflect.Uint8 {
				t.Errorf("%s: %s would be base64 in encoding/json", path, typ)
			}
			walk(typ.Elem(), path)
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		default:
			t.Errorf("%s: %s is not supported", path, typ)
		}
	}
	walk(reflect.TypeFor[types.Config](), "config")
	if len(seen) < 40 {
		t.Errorf("walked only %d types; the walk is broken", len(seen))
	}
}
