package validate

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// seedFiles adds the command's test files, good and bad, as seeds.
func seedFiles(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/validate/*")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
}

// checkInvariants holds for whatever File returns: every problem is positioned, named
// by a JSONPath, and in order.
func checkInvariants(t *testing.T, file string, ps []Problem) {
	t.Helper()
	for _, p := range ps {
		if p.File != file || p.Line < 1 || p.Col < 1 || !strings.HasPrefix(p.Path, "$") || p.Message == "" ||
			(p.Severity != Error && p.Severity != Warning) {
			t.Fatalf("bad problem: %#v", p)
		}
	}
	if !slices.IsSortedFunc(ps, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	}) {
		t.Fatalf("problems out of order: %v", ps)
	}
}

// FuzzFile checks that File never panics, keeps its invariants, and is deterministic.
func FuzzFile(f *testing.F) {
	seedFiles(f)
	f.Add([]byte(mc("ignition:\n  version: 3.4.0\nstorage:\n  files:\n    - path: /a\n      mode: abc\n")))
	f.Add([]byte(`{"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "a",}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := File("f", data)
		checkInvariants(t, "f", ps)
		if again := File("f", data); !reflect.DeepEqual(ps, again) {
			t.Fatalf("File is not deterministic:\n%v\n%v", ps, again)
		}
	})
}

// FuzzMachineConfig puts any YAML or JSON node in a MachineConfig's spec.config, so that
// Ignition's parser and the mapping of its report back to the node get every input,
// not only those the fuzzer wraps in a whole MachineConfig.
func FuzzMachineConfig(f *testing.F) {
	for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
		f.Add([]byte(`{"ignition": {"version": "` + v + `"}, "storage": {"files": [{"path": "/etc/a", "mode": 420, "contents": {"source": "data:,a"}}]}}`))
	}
	f.Add([]byte("ignition:\n  version: 3.5.0\nstorage:\n  disks: [{device: /dev/sdb}]\n  files: [{path: /a, append: [{source: 'data:,'}]}]\npasswd:\n  users: [{name: core, uid: 1}, {name: a}]\nkernelArguments: {shouldExist: [a]}\n"))
	f.Add([]byte("ignition: {version: 3.4.0}\nsystemd:\n  units:\n    - name: a.service\n      contents: \"[Unit]\\nX\"\n      dropins: [{name: x}]\n"))
	f.Add([]byte("ignition: {version: 2.2.0}\n"))
	f.Add([]byte("ignition: {version: 3.1.0}\nstorage: {files: {a: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
			return
		}
		root := machineConfigWith(doc.Content[0])
		c := &checker{file: "f"}
		c.object(0, root)
		Sort(c.probs)
		checkInvariants(t, "f", c.probs)
	})
}

// machineConfigWith returns the root node of a MachineConfig whose spec.config is cfg.
func machineConfigWith(cfg *yaml.Node) *yaml.Node {
	str := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Line: 1, Column: 1}
	}
	mapping := func(kv ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv, Line: 1, Column: 1}
	}
	return mapping(
		str("apiVersion"), str("machineconfiguration.openshift.io/v1"),
		str("kind"), str("MachineConfig"),
		str("metadata"), mapping(str("name"), str("fuzz"), str("labels"), mapping(str("machineconfiguration.openshift.io/role"), str("worker"))),
		str("spec"), mapping(str("config"), cfg),
	)
}
