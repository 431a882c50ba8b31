package manifest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPathAtOffset(t *testing.T) {
	const doc = `{"a": {"b": [1, {"c": "xyz"}, []]}, "d": true}`
	at := func(s string) int64 { return int64(strings.Index(doc, s)) + 1 } // just past s's first byte
	tests := []struct {
		offset int64
		want   []string
		ok     bool
	}{
		{at(`{"a"`), []string{}, true},
		{at(`"a"`), []string{}, true}, // a key belongs to its object
		{at(`{"b"`), []string{"a"}, true},
		{at(`1`), []string{"a", "b", "0"}, true},
		{at(`"xyz"`) + 4, []string{"a", "b", "1", "c"}, true},
		{at(`[]]`), []string{"a", "b", "2"}, true},
		{at(`, []`), []string{"a", "b"}, true}, // between elements
		{at(`true`) + 3, []string{"d"}, true},
		{int64(len(doc)), []string{}, true},
		{0, nil, false},
		{int64(len(doc)) + 1, nil, false},
	}
	for _, tt := range tests {
		got, ok := PathAtOffset([]byte(doc), tt.offset)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("PathAtOffset(%d) = %q, %v; want %q, %v", tt.offset, got, ok, tt.want, tt.ok)
		}
	}
}

// TestPathAtOffsetTypeErrors checks PathAtOffset against the offsets encoding/json
// itself reports, for a scalar and for a container of the wrong type.
func TestPathAtOffsetTypeErrors(t *testing.T) {
	type file struct {
		Mode  *int     `json:"mode"`
		Flags []string `json:"flags"`
	}
	var v struct {
		Files []file `json:"files"`
	}
	tests := []struct {
		doc  string
		want []string
	}{
		{`{"files": [{"mode": 1}, {"mode": "abc"}]}`, []string{"files", "1", "mode"}},
		{`{"files": [{"flags": {"x": 1}}]}`, []string{"files", "0", "flags"}},
		{"{\n \"files\" : [ { \"mode\" :\n 1.5 } ] }", []string{"files", "0", "mode"}},
	}
	for _, tt := range tests {
		err := json.Unmarshal([]byte(tt.doc), &v)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: want a type error, got %v", tt.doc, err)
		}
		if got, ok := PathAtOffset([]byte(tt.doc), te.Offset); !ok || !slices.Equal(got, tt.want) {
			t.Errorf("%s: PathAtOffset(%d) = %q, %v; want %q", tt.doc, te.Offset, got, ok, tt.want)
		}
	}
}

func TestPathAtOffsetInvalidJSON(t *testing.T) {
	for _, doc := range []string{`{"a": [1, 2`, `{"a" 1}`, ``, `  `} {
		if got, ok := PathAtOffset([]byte(doc), int64(len(doc))); ok {
			t.Errorf("PathAtOffset(%q) = %q, true; want false", doc, got)
		}
	}
	// A byte before the damage is still found.
	if got, ok := PathAtOffset([]byte(`{"a": 12, "b": [`), 8); !ok || !slices.Equal(got, []string{"a"}) {
		t.Errorf("got %q, %v; want [a] true", got, ok)
	}
}
