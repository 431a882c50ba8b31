// Package manifest decodes Kubernetes manifests (YAML or JSON, one or many documents per
// file, List kinds expanded) into the MCO API objects mcotui works with. It is handed
// bytes and the name they came from; reading files is the caller's (platform/manifestfile
// reads paths and directories). It keeps each document's YAML node tree so that callers
// can point an error at the line and column of the field the user wrote, in the file
// the user wrote.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	KindPinnedImageSet       = "PinnedImageSet"
	// KubeletConfigs and ContainerRuntimeConfigs are the inputs of generated
	// MachineConfigs (core/generated), which render predicts.
	KindKubeletConfig          = "KubeletConfig"
	KindContainerRuntimeConfig = "ContainerRuntimeConfig"
	// KindOSImageStream is the OS image streams singleton, whose streams render puts
	// in a pool's rendered config.
	KindOSImageStream = "OSImageStream"
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
	Line, Column int // 0 when the problem has no known position in the file
	Msg          string
	// Path is the field the problem is about, from the object's root, in Lookup's terms;
	// nil when the problem is about the whole object or file.
	Path []string
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
	var docs []Document
	for root, err := range Objects(file, data) {
		if err != nil {
			return nil, err
		}
		d, err := DecodeObject(file, len(docs), root)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// DecodeObject decodes one object node, as Objects yields it, into a Document. index is
// the object's 0-based position among its file's objects. The error is an *Error naming
// the object's position, or the field's when the field is known.
func DecodeObject(file string, index int, root *yaml.Node) (Document, error) {
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
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Path: []string{"kind"}, Msg: "object has no kind"}
	}
	switch d.Kind {
	case KindMachineConfig:
		d.Object = &mcfgv1.MachineConfig{}
	case KindMachineConfigPool:
		d.Object = &mcfgv1.MachineConfigPool{}
	case KindMachineConfiguration:
		d.Object = &operatorv1.MachineConfiguration{}
	case KindPinnedImageSet:
		d.Object = &mcfgv1.PinnedImageSet{}
	case KindKubeletConfig:
		d.Object = &mcfgv1.KubeletConfig{}
	case KindContainerRuntimeConfig:
		d.Object = &mcfgv1.ContainerRuntimeConfig{}
	case KindOSImageStream:
		d.Object = &mcfgv1.OSImageStream{}
	default:
		return d, nil
	}
	if d.Name == "" {
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Path: []string{"metadata", "name"}, Msg: d.Kind + " has no metadata.name"}
	}
	raw, err := ToJSON(root)
	if err != nil {
		if n, path, msg := JSONProblem(root); n != nil {
			return d, &Error{File: file, Line: n.Line, Column: n.Column, Path: path, Msg: fmt.Sprintf("%s %s: %s", d.Kind, d.Name, msg)}
		}
		return d, &Error{File: file, Line: root.Line, Column: root.Column, Msg: fmt.Sprintf("%s %s: %s", d.Kind, d.Name, oneLine(err))}
	}
	if err := json.Unmarshal(raw, d.Object); err != nil {
		e := &Error{File: file, Line: d.Line, Column: d.Column, Msg: fmt.Sprintf("%s %s: %v", d.Kind, d.Name, err)}
		if path := jsonErrorPath(raw, err); path != nil {
			if n := Lookup(root, path...); n != nil {
				e.Line, e.Column, e.Path = n.Line, n.Column, path
			}
		}
		return d, e
	}
	return d, nil
}

// jsonErrorPath returns the path of the field a json.Unmarshal error of raw is about, or
// nil when the error does not say.
func jsonErrorPath(raw []byte, err error) []string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return nil
	}
	field := strings.Split(te.Field, ".")
	// The offset names the exact value, list indices included, which Field leaves out.
	// But an UnmarshalJSON method (IntOrString, Quantity) reports an offset into the
	// value it was given: trust the offset only when it leads to the field Field names.
	if path, ok := PathAtOffset(raw, te.Offset); ok && lastKey(path) == field[len(field)-1] {
		return path
	}
	return field
}

// lastKey returns the last segment of path that is not a list index.
func lastKey(path []string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if _, isIndex := atoi(path[i]); !isIndex {
			return path[i]
		}
	}
	return ""
}

// oneLine joins the lines of err's message, as yaml.v3 writes several for one error.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
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
		n = resolveAlias(n)
		switch n.Kind {
		case yaml.MappingNode:
			n = mappingValue(n, p, 0)
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

// maxMergeDepth bounds the merge keys mappingValue follows: an anchor can merge itself.
const maxMergeDepth = 32

// mappingValue returns the value of key in mapping m, or nil. It follows merge keys (<<)
// as yaml.v3, and so ToJSON, do: a key written in m wins over a merged one, an earlier
// merged mapping over a later one; of a key written twice, the last one.
func mappingValue(m *yaml.Node, key string, depth int) *yaml.Node {
	var v *yaml.Node
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch k := m.Content[i]; {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			merges = append(merges, m.Content[i+1])
		case k.Value == key:
			v = m.Content[i+1]
		}
	}
	if v != nil || depth >= maxMergeDepth {
		return v
	}
	for _, mv := range merges {
		mv = resolveAlias(mv)
		sources := []*yaml.Node{mv}
		if mv.Kind == yaml.SequenceNode {
			sources = mv.Content
		}
		for _, src := range sources {
			if src = resolveAlias(src); src.Kind == yaml.MappingNode {
				if v := mappingValue(src, key, depth+1); v != nil {
					return v
				}
			}
		}
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
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

// yamlError turns a yaml.v3 parse error of data into an Error with the line it names.
func yamlError(file string, data []byte, err error) error {
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
	if parserProblems[msg] {
		// yaml.v3 numbers the lines of its parser's errors from 0, and leaves line 0
		// out; its scanner's errors it numbers from 1.
		line++
	}
	// At the end of the input the parser can name the line after the last one.
	line = min(line, lineCount(data))
	col := 0
	if line > 0 {
		col = 1
	}
	return &Error{File: file, Line: line, Column: col, Msg: "invalid YAML or JSON: " + msg}
}

// lineCount returns the number of lines of data, the last one counted even without a
// newline.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return max(n, 1)
}

// parserProblems are the messages of yaml.v3's parser errors (parserc.go), as opposed to
// its scanner's.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found duplicate %TAG directive":         true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
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
