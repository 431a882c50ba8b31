package manifest

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestJSONProblem(t *testing.T) {
	tests := []struct {
		doc       string
		line, col int
		path      []string
		msg       string
	}{
		{"a: 1\nb: [x, {c: 1, c: 2}]\n", 2, 15, []string{"b", "1", "c"}, `key "c" is given twice, first on line 2`},
		{"a:\n  1: x\n", 2, 3, []string{"a", "1"}, "key 1 is not a string: quote it"},
		{"a: [1, .nan]\n", 1, 8, []string{"a", "1"}, ".nan is not a number JSON can hold"},
		{"x: &x {n: .inf}\ny: *x\n", 1, 11, []string{"x", "n"}, ".inf is not a number JSON can hold"},
		{"b: &b {1: x}\na:\n  <<: *b\n", 1, 8, []string{"b", "1"}, "key 1 is not a string: quote it"},
		{"a: {b: [1, 2.5, '.inf', x]}\n", 0, 0, nil, ""},
	}
	for _, tt := range tests {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tt.doc), &n); err != nil {
			t.Fatal(err)
		}
		at, path, msg := JSONProblem(&n)
		_, convErr := ToJSON(&n)
		if (at == nil) != (convErr == nil) {
			t.Errorf("%q: JSONProblem found %v, ToJSON failed with %v", tt.doc, at, convErr)
		}
		line, col := 0, 0
		if at != nil {
			line, col = at.Line, at.Column
		}
		if line != tt.line || col != tt.col || !slices.Equal(path, tt.path) || msg != tt.msg {
			t.Errorf("%q: got %d:%d %q %q, want %d:%d %q %q", tt.doc, line, col, path, msg, tt.line, tt.col, tt.path, tt.msg)
		}
	}
}
