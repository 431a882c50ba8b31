package validate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/vcontext/tree"
	"github.com/mcotui/mcotui/core/manifest"
	"gopkg.in/yaml.v3"
)

// path is a field's location from a document's root: object keys (string) and list
// indices (int), as the contexts of Ignition's report hold them.
type path []any

// String writes p as a JSONPath (RFC 9535): $ for the document root, .key for a key
// that is a plain name, ['key'] for any other key, [i] for a list index. For example
// $.spec.config.storage.files[0].path or $.metadata.labels['machineconfiguration.openshift.io/role'].
func (p path) String() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case string:
			if isName(s) {
				b.WriteByte('.')
				b.WriteString(s)
			} else {
				b.WriteString("['")
				b.WriteString(quoteKey(s))
				b.WriteString("']")
			}
		}
	}
	return b.String()
}

// with returns a new path: p followed by segs. It never shares p's array, so paths held
// by problems stay as they were.
func (p path) with(segs ...any) path {
	out := make(path, 0, len(p)+len(segs))
	return append(append(out, p...), segs...)
}

// keys returns p in manifest.Lookup's terms.
func (p path) keys() []string {
	out := make([]string, len(p))
	for i, s := range p {
		switch s := s.(type) {
		case int:
			out[i] = strconv.Itoa(s)
		case string:
			out[i] = s
		}
	}
	return out
}

// isName reports whether key can be written in JSONPath's dot shorthand.
func isName(key string) bool {
	if key == "" {
		return false
	}
	for i, c := range key {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quoteKey escapes key for a single-quoted JSONPath name.
func quoteKey(key string) string {
	var b strings.Builder
	for _, c := range key {
		switch {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// contextPath converts the context of an Ignition report entry. key reports whether the
// entry is about the last key itself rather than its value (Ignition's unused keys).
func contextPath(segs []any) (p path, key bool) {
	p = make(path, 0, len(segs))
	for i, s := range segs {
		switch s := s.(type) {
		case int:
			p = append(p, s)
		case string:
			p = append(p, s)
		case tree.Key:
			p = append(p, string(s))
			key = i == len(segs)-1
		default:
			p = append(p, fmt.Sprint(s))
		}
	}
	return p, key
}

// typedPath turns a path in manifest.Lookup's terms into a path, telling list indices
// from keys by the nodes found along it from n.
func typedPath(n *yaml.Node, keys []string) path {
	p := make(path, 0, len(keys))
	for _, k := range keys {
		n = resolve(n)
		if n != nil && n.Kind == yaml.SequenceNode {
			if i, err := strconv.Atoi(k); err == nil && i >= 0 {
				p = append(p, i)
				n = manifest.Lookup(n, k)
				continue
			}
		}
		p = append(p, k)
		n = manifest.Lookup(n, k)
	}
	return p
}

// locate returns the node p leads to from n, or the deepest node on the way when the
// rest of p is not there (a missing required field is reported at its parent). With key,
// it returns the key of the last segment instead of its value.
func locate(n *yaml.Node, p path, key bool) *yaml.Node {
	keys := p.keys()
	for i := len(keys); i >= 0; i-- {
		found := manifest.Lookup(n, keys[:i]...)
		if found == nil {
			continue
		}
		if key && i == len(keys) && i > 0 {
			if k := keyNode(manifest.Lookup(n, keys[:i-1]...), keys[i-1]); k != nil {
				return k
			}
		}
		return found
	}
	return n
}

// keyNode returns the key node of name in mapping m, or nil.
func keyNode(m *yaml.Node, name string) *yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var k *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			k = m.Content[i] // the last one wins, as in Lookup
		}
	}
	return k
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}
