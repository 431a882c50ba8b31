// Package manifest reads Kubernetes manifests (YAML or JSON, one or many documents per
// file, List kinds expanded) into the MCO API objects mcotui works with. It keeps each
// document's YAML node tree so that callers can point an error at the line and column of
// the field the user wrote, in the file the user wrote.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"gopkg.in/yaml.v3"
)

// Kinds mcotui decodes into typed objects. Other kinds are kept as untyped documents so
// that a directory holding a whole cluster's manifests can be read without errors.
const (
	KindMachineConfig        = "MachineConfig"
	KindMachineConfigPool    = "MachineConfigPool"
	KindMachineConfiguration = "MachineConfiguration"
)

// Document is one object read from a manifest file.
type Document struct {
	File   string // the path as the caller named it
	Index  int    // 0-based position among the file's objects
	Line   int    // 1-based line where the object starts
	Column int    // 1-based column where the object starts

	APIVersion string
	Kind       string
	Name       string

	// Root is the object's mapping node. Positions of fields are looked up in it.
	Root *yaml.Node
	// Object is *mcfgv1.MachineConfig, *mcfgv1.MachineConfigPool or
	// *operatorv1.MachineConfiguration for those kinds, nil for any other kind.
	Object any
}

// String names the document the way errors should: file, position and object.
func (d Document) String() string {
	return fmt.Sprintf("%s:%d:%d: %s %s", d.File, d.Line, d.Column, d.Kind, d.Name)
}

// Error is a problem with a manifest that has a position in its file.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Decode reads every object in data. file is used only to name the source in documents
// and errors. Empty documents are skipped; a document that is not a mapping, or that a
// typed kind cannot be decoded from, is an error naming its position.
func Decode(file string, data []byte) ([]Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(file, err)
		}
		if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
			continue
		}
		root := n.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue // an empty document between separators
		}
		objs, err := expand(file, root)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			d, err := decodeObject(file, len(docs), o)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// expand returns the items of a List kind, or the node itself.
func expand(file string, root *yaml.Node) ([]*yaml.Node, error) {
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Column: root.Column, Msg: "expected a Kubernetes object (a mapping with apiVersion and kind)"}
	}
	kind := scalar(Lookup(root, "kind"))
	if !strings.HasSuffix(kind, "List") {
		return []*yaml.Node{root}, nil
	}
	items := Lookup(root, "items")
	if items == nil {
		return nil, nil
	}
	if items.Kind != yaml.SequenceNode {
		return nil, &Error{File: file, Line: items.Line, Column: items.Column, Msg: kind + ": items must be a list"}
	}
	for _, it := range items.Content {
		if it.Kind != yaml.MappingNode {
			return nil, &Error{File: file, Line: it.Line, Column: it.Column, Msg: kind + ": each item must be an object"}
		}
	}
	return items.Content, nil
}

func decodeObject(file string, index int, root *yaml.Node) (Document, error) {
	d := Document{
		File:       file,
		Index:      index,
		Line:       root.Line,
		Column:     root.Column,
		APIVersion: scalar(Lookup(root, "apiVersion")),
		Kind:       scalar(Lookup(root, "kind")),
		Name:       scalar(Lookup(root, "metadata", "name")),
		Root:       root,
	}
	if d.Kind == "" {
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Msg: "object has no kind"}
	}
	switch d.Kind {
	case KindMachineConfig:
		d.Object = &mcfgv1.MachineConfig{}
	case KindMachineConfigPool:
		d.Object = &mcfgv1.MachineConfigPool{}
	case KindMachineConfiguration:
		d.Object = &operatorv1.MachineConfiguration{}
	default:
		return d, nil
	}
	if d.Name == "" {
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Msg: d.Kind + " has no metadata.name"}
	}
	raw, err := ToJSON(root)
	if err != nil {
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Msg: fmt.Sprintf("%s %s: %v", d.Kind, d.Name, err)}
	}
	if err := json.Unmarshal(raw, d.Object); err != nil {
		line, col := d.Line, d.Column
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			if n := Lookup(root, strings.Split(te.Field, ".")...); n != nil {
				line, col = n.Line, n.Column
			}
		}
		return d, &Error{File: file, Line: line, Column: col, Msg: fmt.Sprintf("%s %s: %v", d.Kind, d.Name, err)}
	}
	return d, nil
}

// ToJSON converts a YAML node to JSON. Mapping keys must be strings, as in any
// Kubernetes object.
func ToJSON(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Lookup follows path (mapping keys, or decimal indices into sequences) from n and
// returns the node found, or nil.
func Lookup(n *yaml.Node, path ...string) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
				}
			}
			n = next
		case yaml.SequenceNode:
			i, ok := atoi(p)
			if !ok || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

func atoi(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
		if v > 1<<30 {
			return 0, false
		}
	}
	return v, true
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// yamlError turns a yaml.v3 parse error into an Error with the line it names.
func yamlError(file string, err error) error {
	msg := err.Error()
	var line int
	// yaml.v3 reports "yaml: line N: message".
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if v, ok := atoi(num); ok {
				line, msg = v, text
			}
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	col := 0
	if line > 0 {
		col = 1
	}
	return &Error{File: file, Line: line, Column: col, Msg: "invalid YAML or JSON: " + msg}
}

// Load reads the manifests in paths. A directory contributes its *.yaml, *.yml and
// *.json files, recursively, in lexical order; a file is read whatever its name. An
// unreadable path is an error naming it.
func Load(paths ...string) ([]Document, error) {
	var docs []Document
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read manifest: %w", err)
			}
			ds, err := Decode(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, ds...)
		}
	}
	return docs, nil
}

func manifestFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifest directory %s: %w", p, err)
	}
	slices.Sort(files)
	return files, nil
}

// MachineConfigs returns the MachineConfigs among docs, in document order.
func MachineConfigs(docs []Document) []*mcfgv1.MachineConfig {
	return objects[*mcfgv1.MachineConfig](docs)
}

// Pools returns the MachineConfigPools among docs, in document order.
func Pools(docs []Document) []*mcfgv1.MachineConfigPool {
	return objects[*mcfgv1.MachineConfigPool](docs)
}

// MachineConfigurations returns the MachineConfigurations among docs, in document order.
func MachineConfigurations(docs []Document) []*operatorv1.MachineConfiguration {
	return objects[*operatorv1.MachineConfiguration](docs)
}

func objects[T any](docs []Document) []T {
	var out []T
	for _, d := range docs {
		if o, ok := d.Object.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
