package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
)

// PathAtOffset returns the path, in Lookup's terms, of the innermost value of the JSON
// document data that holds the byte at offset-1. That is the value encoding/json was
// reading when it failed with an UnmarshalTypeError of that Offset: Offset counts the bytes
// read, so it falls just past a scalar, or just past the bracket of an array or object.
// The path is empty for the root; ok is false when no value holds that byte or data is not
// valid JSON up to it.
//
// It lets a caller that converted a YAML node to JSON (ToJSON) lead an error about the
// JSON back to the node the user wrote.
func PathAtOffset(data []byte, offset int64) (path []string, ok bool) {
	f := &offsetFinder{dec: json.NewDecoder(bytes.NewReader(data)), data: data, at: offset - 1}
	f.dec.UseNumber()
	if f.at < 0 || f.at >= int64(len(data)) {
		return nil, false
	}
	if err := f.value(); err != nil && !errors.Is(err, errPassed) {
		return nil, false
	}
	return f.found, f.ok
}

// errPassed ends the walk once it is past the byte looked for.
var errPassed = errors.New("past the offset")

type offsetFinder struct {
	dec   *json.Decoder
	data  []byte
	at    int64    // the byte looked for
	path  []string // the path of the value being read
	found []string
	ok    bool
}

// value reads one JSON value and records its path if it is the innermost value holding
// the byte looked for. Values are closed innermost first, so the first match wins.
func (f *offsetFinder) value() error {
	if f.nextToken() > f.at {
		return errPassed
	}
	tok, err := f.dec.Token()
	if err != nil {
		return err
	}
	err = f.children(tok)
	passed := errors.Is(err, errPassed)
	if err != nil && !passed {
		return err
	}
	// A walk that passed the byte inside this value stopped between two of its children,
	// or at its brackets: this value is the innermost one holding it.
	if !f.ok && (passed || f.at < f.dec.InputOffset()) {
		f.found, f.ok = slices.Clone(f.path), true
	}
	return err
}

// children reads the members of an object or the elements of an array that tok opened,
// and the closing bracket. Any other token has no children.
func (f *offsetFinder) children(tok json.Token) error {
	switch tok {
	case json.Delim('{'):
		for f.dec.More() {
			key, err := f.dec.Token()
			if err != nil {
				return err
			}
			name, _ := key.(string)
			if err := f.child(name); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; f.dec.More(); i++ {
			if err := f.child(strconv.Itoa(i)); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err := f.dec.Token()
	return err
}

func (f *offsetFinder) child(seg string) error {
	f.path = append(f.path, seg)
	err := f.value()
	f.path = f.path[:len(f.path)-1]
	return err
}

// nextToken returns the offset where the next value starts: InputOffset is where the
// last token ended, before any whitespace, colon or comma.
func (f *offsetFinder) nextToken() int64 {
	i := f.dec.InputOffset()
	for ; i < int64(len(f.data)); i++ {
		switch f.data[i] {
		case ' ', '\t', '\r', '\n', ':', ',':
		default:
			return i
		}
	}
	return i
}
