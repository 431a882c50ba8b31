package manifest

import (
	"fmt"
	"math"

	"gopkg.in/yaml.v3"
)

// JSONProblem returns the first node under n, in document order, that keeps ToJSON from
// converting n: a mapping key that is not a string or that is given twice, or a number
// JSON cannot hold. It returns the node, its path from n in Lookup's terms (for a key,
// the path of its value) and why, or a nil node when it finds none. It lets an error of
// ToJSON point at the field to fix.
func JSONProblem(n *yaml.Node) (at *yaml.Node, path []string, msg string) {
	w := jsonWalker{seen: map[*yaml.Node]bool{}}
	w.walk(n)
	return w.at, w.path, w.msg
}

type jsonWalker struct {
	seen  map[*yaml.Node]bool // alias targets already walked: aliases can nest, or loop
	stack []string
	at    *yaml.Node
	path  []string
	msg   string
}

func (w *jsonWalker) found(n *yaml.Node, format string, args ...any) {
	w.at, w.path, w.msg = n, append([]string{}, w.stack...), fmt.Sprintf(format, args...)
}

// walk returns false once a problem is found.
func (w *jsonWalker) walk(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	switch n.Kind {
	case yaml.AliasNode:
		if w.seen[n.Alias] {
			return true
		}
		w.seen[n.Alias] = true
		return w.walk(n.Alias)
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if !w.walk(c) {
				return false
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if !w.child(fmt.Sprint(i), c) {
				return false
			}
		}
	case yaml.MappingNode:
		return w.mapping(n)
	case yaml.ScalarNode:
		if n.ShortTag() == "!!float" {
			var f float64
			if n.Decode(&f) == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
				w.found(n, "%s is not a number JSON can hold", n.Value)
				return false
			}
		}
	}
	return true
}

func (w *jsonWalker) mapping(n *yaml.Node) bool {
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch tag := k.ShortTag(); {
		case tag == "!!merge":
			if !w.walk(v) {
				return false
			}
			continue
		case tag != "!!str":
			w.stack = append(w.stack, k.Value)
			w.found(k, "key %s is not a string: quote it", k.Value)
			return false
		}
		if prev, ok := first[k.Value]; ok {
			w.stack = append(w.stack, k.Value)
			w.found(k, "key %q is given twice, first on line %d", k.Value, prev.Line)
			return false
		}
		first[k.Value] = k
		if !w.child(k.Value, v) {
			return false
		}
	}
	return true
}

func (w *jsonWalker) child(seg string, n *yaml.Node) bool {
	w.stack = append(w.stack, seg)
	ok := w.walk(n)
	w.stack = w.stack[:len(w.stack)-1]
	return ok
}
