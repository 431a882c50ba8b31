package manifest

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"strings"

	"gopkg.in/yaml.v3"
)

// Objects yields the root mapping node of every object in data, in file order, the
// items of a List kind in its place. Empty documents are skipped. A document that is not
// an object yields an *Error and reading goes on with the next one, so that a checker can
// report every bad document of a file; a YAML syntax error yields an *Error and ends the
// sequence, as nothing after it can be read reliably.
func Objects(file string, data []byte) iter.Seq2[*yaml.Node, error] {
	return func(yield func(*yaml.Node, error) bool) {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, yamlError(file, data, err))
				return
			}
			if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
				continue
			}
			root := n.Content[0]
			if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
				continue // an empty document between separators
			}
			for o, err := range expand(file, root) {
				if !yield(o, err) {
					return
				}
			}
		}
	}
}

// expand yields the items of a List kind, or the node itself; an error for each item, or
// the document, that is not an object.
func expand(file string, root *yaml.Node) iter.Seq2[*yaml.Node, error] {
	return func(yield func(*yaml.Node, error) bool) {
		if root.Kind != yaml.MappingNode {
			yield(nil, &Error{File: file, Line: root.Line, Column: root.Column, Msg: "expected a Kubernetes object (a mapping with apiVersion and kind)"})
			return
		}
		kind := scalar(Lookup(root, "kind"))
		if !strings.HasSuffix(kind, "List") {
			yield(root, nil)
			return
		}
		items := Lookup(root, "items")
		if items == nil {
			return
		}
		if items.Kind != yaml.SequenceNode {
			yield(nil, &Error{File: file, Line: items.Line, Column: items.Column, Path: []string{"items"}, Msg: kind + ": items must be a list"})
			return
		}
		for _, it := range items.Content {
			if it.Kind != yaml.MappingNode {
				if !yield(nil, &Error{File: file, Line: it.Line, Column: it.Column, Msg: kind + ": each item must be an object"}) {
					return
				}
				continue
			}
			if !yield(it, nil) {
				return
			}
		}
	}
}
