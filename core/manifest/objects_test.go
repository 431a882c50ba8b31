package manifest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestObjectsGoesOn checks that Objects reports a bad document and reads on, and stops
// at a syntax error.
func TestObjectsGoesOn(t *testing.T) {
	data := `kind: A
---
- not an object
---
kind: List
items:
  - kind: B
  - 7
  - kind: C
---
---
kind: D
---
kind: [E
---
kind: F
`
	var got []string
	for root, err := range Objects("f.yaml", []byte(data)) {
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("%d:%d %s", root.Line, root.Column, Lookup(root, "kind").Value))
	}
	want := []string{
		"1:1 A",
		"f.yaml:3:1: expected a Kubernetes object (a mapping with apiVersion and kind)",
		"7:5 B",
		"f.yaml:8:5: List: each item must be an object",
		"9:5 C",
		"12:1 D",
		"f.yaml:14:1: invalid YAML or JSON: did not find expected ',' or ']'",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestObjectsStopsWhenAsked(t *testing.T) {
	n := 0
	for range Objects("f", []byte("kind: List\nitems: [{kind: A}, {kind: B}]\n---\nkind: C\n")) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d objects after break, want 1", n)
	}
}

// TestYAMLErrorLines checks the line of yaml.v3's errors, which its parser numbers from
// 0 and its scanner from 1.
func TestYAMLErrorLines(t *testing.T) {
	tests := []struct {
		data string
		line int
	}{
		{"a: 1\nb: 2\nc: [1, 2\nd: 3\n", 3},              // parser: the flow sequence's line
		{"a: 1\nb: {x: 1\n", 2},                          // parser
		{"a: 1\nb: 'x' y\n", 2},                          // parser
		{"[1, 2", 1},                                     // parser, line 0 left out
		{"a: 1\n b: 2\n", 2},                             // scanner
		{"x: 1\na: b: c\n", 2},                           // scanner
		{"a: 1\nb: \"abc\n", 2},                          // scanner: the string's line
		{"a: 1\nb:\n  - x\n  y: 2\n", 3},                 // parser: the sequence's line
		{"[1, 2\n", 1},                                   // parser, past the last line
		{"kind: A\n---\nkind: B\n---\nkind: [1\n ]]", 5}, // a later document
	}
	for _, tt := range tests {
		_, err := Decode("f", []byte(tt.data))
		var me *Error
		if !errors.As(err, &me) {
			t.Errorf("%q: want an *Error, got %v", tt.data, err)
			continue
		}
		if me.Line != tt.line {
			t.Errorf("%q: line %d, want %d (%v)", tt.data, me.Line, tt.line, err)
		}
	}
}

// TestDecodeObjectTypeErrorPath checks that a field of the wrong type is named by its
// path, list indices included, and positioned at the value.
func TestDecodeObjectTypeErrorPath(t *testing.T) {
	tests := []struct {
		data      string
		path      []string
		line, col int
	}{{
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: m\nspec:\n  kernelArguments:\n    - a\n    - {b: c}\n",
		path: []string{"spec", "kernelArguments", "1"}, line: 8, col: 7,
	}, {
		// IntOrString reports an offset into its own value; Field still names it.
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: p\nspec:\n  maxUnavailable: [1]\n",
		path: []string{"spec", "maxUnavailable"}, line: 6, col: 19,
	}, {
		data: "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: m\nspec:\n  fips: \"yes\"\n",
		path: []string{"spec", "fips"}, line: 6, col: 9,
	}}
	for _, tt := range tests {
		_, err := Decode("f", []byte(tt.data))
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("want an *Error, got %v", err)
		}
		if !slices.Equal(me.Path, tt.path) || me.Line != tt.line || me.Column != tt.col {
			t.Errorf("got %q at %d:%d, want %q at %d:%d (%v)", me.Path, me.Line, me.Column, tt.path, tt.line, tt.col, err)
		}
	}
}
