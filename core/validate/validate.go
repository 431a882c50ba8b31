// Package validate checks MachineConfig manifests and raw Ignition configs the way a
// running node will meet them: Ignition's own validation, the MachineConfig fields MCO
// checks, and the Ignition sections that only a machine's first boot applies. Every
// problem is positioned in the file the user wrote, YAML or JSON, and named by a
// JSONPath from its document's root.
package validate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcotui/mcotui/core/manifest"
	"gopkg.in/yaml.v3"
)

// Severity says whether a problem stops a config from being used.
type Severity int

const (
	// Error: the config is refused, by Ignition, the API server, MCO or mcotui.
	Error Severity = iota
	// Warning: the config is used, but probably not as its author meant.
	Warning
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// MarshalText writes the severity as String does, for JSON reports.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Problem is one finding, at a position in a file.
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`   // 1-based
	Col      int      `json:"column"` // 1-based, in characters
	Severity Severity `json:"severity"`
	// Path is the JSONPath of the field from its document's root (see path.String):
	// $.spec.config.storage.files[0].path in a MachineConfig, $.storage.files[0].path in
	// a raw Ignition config, $ for the document itself.
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String writes the problem as FILE:LINE:COL: SEVERITY: PATH: MESSAGE.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s: %s", p.File, p.Line, p.Col, p.Severity, p.Path, p.Message)
}

// File checks data, the contents of the file named file, and returns its problems in
// order of position. data holds either Kubernetes manifests (YAML or JSON, one or many
// documents, List kinds expanded) or one raw Ignition config: a document is a raw
// Ignition config when it is an object with an ignition key and no kind.
func File(file string, data []byte) []Problem {
	return FileWith(file, data, Options{})
}

// Options are what File does not know from the file alone.
type Options struct {
	// OSImageStream is the OS image stream the configs' pools use (osstream.RHEL9,
	// RHEL10, CentOS10), "" when unknown. On a RHEL 10 stream a config that makes runc
	// CRI-O's default runtime, and a ContainerRuntimeConfig that asks for runc, are
	// errors, as render and the controller refuse them (osstream.CheckRunc).
	OSImageStream string
}

// FileWith is File, knowing what opts say.
func FileWith(file string, data []byte, opts Options) []Problem {
	c := &checker{file: file, opts: opts}
	c.check(data)
	Sort(c.probs)
	return c.probs
}

// Sort orders problems by file, line and column, keeping the order of problems found
// at one position.
func Sort(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// checker gathers the problems of one file.
type checker struct {
	file  string
	opts  Options
	pool  string // the role label of the MachineConfig being checked, if any
	probs []Problem
}

func (c *checker) check(data []byte) {
	jsonStart, isJSON := jsonValueStart(data)
	if isJSON {
		// JSON's own error names the bad character; YAML's only the line. A file in
		// YAML's flow style looks like JSON too: it is read as the YAML it is.
		var v json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil && !isYAML(data) {
			c.jsonSyntax(data, err)
			return
		}
	}
	objects := 0
	for root, err := range manifest.Objects(c.file, data) {
		if err != nil {
			c.manifestError(nil, err)
			continue
		}
		switch {
		case !isIgnition(root):
			c.object(objects, root)
		case isJSON && root.Line == jsonStart.line && root.Column == jsonStart.col:
			// The file is this config: Ignition checks the very bytes a machine would get,
			// strictly as JSON, which YAML is not.
			c.ignition(root, path{}, data)
		default:
			if !isJSON {
				c.add(Warning, root, path{}, "Ignition reads JSON only: this config is checked as the JSON it converts to; convert it before a machine gets it")
			}
			c.ignition(root, path{}, nil)
		}
		objects++
	}
	if objects == 0 && len(c.probs) == 0 {
		c.addAt(Warning, 1, 1, path{}, "the file holds no object: no MachineConfig, no other manifest, no Ignition config")
	}
}

// isIgnition reports whether an object is a raw Ignition config rather than a manifest.
func isIgnition(root *yaml.Node) bool {
	return manifest.Lookup(root, "ignition") != nil && manifest.Lookup(root, "kind") == nil
}

// add records a problem at node n, or at the file's start when n has no position.
func (c *checker) add(sev Severity, n *yaml.Node, p path, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	c.addAt(sev, line, col, p, fmt.Sprintf(format, args...))
}

func (c *checker) addAt(sev Severity, line, col int, p path, msg string) {
	// One problem, one line: some messages (yaml.v3's, a unit file's) span several.
	msg = strings.Join(strings.Fields(msg), " ")
	c.probs = append(c.probs, Problem{File: c.file, Line: line, Col: col, Severity: sev, Path: p.String(), Message: msg})
}

// manifestError records an error from reading manifests. root is the object it is
// about, nil for an error about the file.
func (c *checker) manifestError(root *yaml.Node, err error) {
	var me *manifest.Error
	if !errors.As(err, &me) {
		c.add(Error, root, path{}, "%s", err)
		return
	}
	line, col := me.Line, me.Column
	if line < 1 {
		line, col = 1, 1
	}
	// The message is kept as the decoder wrote it: the Go types it names may have
	// UnmarshalJSON methods (an IntOrString says int32) that friendly cannot know of.
	c.addAt(Error, line, max(col, 1), typedPath(root, me.Path), me.Msg)
}

// jsonSyntax records a JSON syntax error at the character it names.
func (c *checker) jsonSyntax(data []byte, err error) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		c.addAt(Error, 1, 1, path{}, "invalid JSON: "+err.Error())
		return
	}
	// Offset counts the bytes read, the bad one included.
	pos := position(data, se.Offset-1)
	c.addAt(Error, pos.line, pos.col, path{}, "invalid JSON: "+err.Error())
}

type pos struct{ line, col int }

// position returns the line and column (in characters, like yaml.v3) of byte offset
// off of data, clamped to data.
func position(data []byte, off int64) pos {
	off = min(max(off, 0), int64(len(data)))
	p := pos{line: 1, col: 1}
	lineStart := 0
	for i := range int(off) {
		if data[i] == '\n' {
			p.line++
			lineStart = i + 1
		}
	}
	p.col += utf8.RuneCount(data[lineStart:off])
	return p
}

// jsonValueStart returns the position of the first character of data when it starts
// like a JSON object, the form of every raw Ignition config.
func jsonValueStart(data []byte) (pos, bool) {
	for i, b := range data {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return position(data, int64(i)), true
		}
		return pos{}, false
	}
	return pos{}, false
}

// isYAML reports whether data is a well-formed YAML stream.
func isYAML(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
