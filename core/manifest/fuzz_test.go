package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: m\n  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  kernelArguments: [a]\n  config:\n    ignition: {version: 3.5.0}\n",
	"apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: p}\nspec:\n  maxUnavailable: 10%\n---\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n",
	`{"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration", "metadata": {"name": "cluster"}}`,
	"a: &x {b: [1, 2]}\nc: *x\nkind: X\n",
	"kind: [\n",
	"- 1\n---\n\n---\nkind: A\n",
}

// FuzzDecode checks that Decode never panics, is deterministic, and positions every
// document and error it returns.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := Decode("f", data)
		again, err2 := Decode("f", data)
		if fmt.Sprint(err) != fmt.Sprint(err2) || summary(docs) != summary(again) {
			t.Fatalf("Decode is not deterministic: %v / %v\n%s\n%s", err, err2, summary(docs), summary(again))
		}
		if err != nil {
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("error is no *Error: %v", err)
			}
			if me.Line < 0 || me.Column < 0 || (me.Line == 0) != (me.Column == 0) {
				t.Fatalf("bad position %d:%d: %v", me.Line, me.Column, err)
			}
			return
		}
		for i, d := range docs {
			if d.Index != i || d.Line < 1 || d.Column < 1 || d.Root == nil || d.Kind == "" {
				t.Fatalf("bad document %d: %+v", i, d)
			}
		}
	})
}

func summary(docs []Document) string {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "%d %d:%d %s %s %s %T\n", d.Index, d.Line, d.Column, d.APIVersion, d.Kind, d.Name, d.Object)
	}
	return b.String()
}

// FuzzJSONPositions checks the helpers that lead an error about JSON back to YAML: every
// path PathAtOffset finds in the JSON that ToJSON makes of a node leads back to a node,
// and JSONProblem finds a problem only in a node ToJSON refuses.
func FuzzJSONPositions(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), 17)
	}
	f.Fuzz(func(t *testing.T, data []byte, off int) {
		for root, err := range Objects("f", data) {
			if err != nil {
				continue
			}
			raw, err := ToJSON(root)
			if at, path, msg := JSONProblem(root); at != nil && err == nil {
				t.Fatalf("JSONProblem: %q at %q, but ToJSON converts it", msg, path)
			}
			if err != nil {
				continue
			}
			offset := int64(off) % int64(len(raw)+2)
			path, ok := PathAtOffset(raw, offset)
			if !ok || Lookup(root, path...) != nil {
				continue
			}
			// ToJSON writes invalid UTF-8 in a key as U+FFFD.
			if slices.ContainsFunc(path, func(s string) bool { return strings.ContainsRune(s, '\uFFFD') }) {
				continue
			}
			t.Fatalf("PathAtOffset(%s, %d) = %q, which Lookup does not find", raw, offset, path)
		}
	})
}
