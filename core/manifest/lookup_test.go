package manifest

import (
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLookupMergeKeys(t *testing.T) {
	const doc = `
base: &base {a: base-a, b: base-b, nested: {x: 1}}
other: &other {a: other-a, c: other-c}
self: &self {<<: *self, s: 1}
m:
  a: own-a
  <<: [*base, *other]
list: &l [zero]
`
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	root := n.Content[0]
	tests := []struct {
		path []string
		want string // the scalar found, "" for none
	}{
		{[]string{"m", "a"}, "own-a"},         // written wins over merged
		{[]string{"m", "b"}, "base-b"},        // merged
		{[]string{"m", "c"}, "other-c"},       // from the second merged mapping
		{[]string{"m", "nested", "x"}, "1"},   // through a merged mapping
		{[]string{"m", "zzz"}, ""},            // nowhere
		{[]string{"self", "s"}, "1"},          // a mapping that merges itself
		{[]string{"self", "nope"}, ""},        // ... ends
		{[]string{"list", "0"}, "zero"},       // sequences as before
		{[]string{"list", "1"}, ""},           // out of range
		{[]string{"base", "a", "deeper"}, ""}, // past a scalar
	}
	for _, tt := range tests {
		got := ""
		if v := Lookup(root, tt.path...); v != nil {
			got = v.Value
		}
		if got != tt.want {
			t.Errorf("Lookup(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	// Lookup agrees with what yaml.v3 decodes.
	var m map[string]any
	if err := Lookup(root, "m").Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m["a"] != "own-a" || m["b"] != "base-b" || m["c"] != "other-c" {
		t.Errorf("yaml.v3 decodes m as %v", m)
	}
}
