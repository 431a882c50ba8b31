// Package manifestfile reads manifest files and directories from disk for the offline
// commands (render, and any other that takes paths): the I/O half of core/manifest,
// which decodes bytes and never touches the file system itself.
package manifestfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcotui/mcotui/core/manifest"
)

// DefaultMaxSize is the default cap on one input file of the offline commands: well
// above any real manifest (etcd keeps an object to 1.5 MiB by default), and small enough
// that decoding a file under it cannot run a workstation out of memory.
const DefaultMaxSize = 8 << 20

// TooLargeError says an input file is bigger than the cap.
type TooLargeError struct {
	Name string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is more than %d bytes, the most an input may hold (--max-input-size); a MachineConfig is at most 1.5 MiB in etcd", e.Name, e.Max)
}

// TotalTooLargeError says the input files together are bigger than their cap, 4 times
// the cap of one: each file may be near a MachineConfig's limit, but hundreds of them
// would take gigabytes to decode.
type TotalTooLargeError struct {
	Names string
	Max   int64
}

func (e *TotalTooLargeError) Error() string {
	return fmt.Sprintf("the inputs %s are more than %d bytes together, 4 times --max-input-size: check them in parts, or raise --max-input-size", e.Names, e.Max)
}

// TotalMax is the cap on all the inputs of one command, given the cap of one.
func TotalMax(max int64) int64 { return 4 * max }

// Read returns what the file name holds, refusing one of more than max bytes at once
// (from its size, before reading) and any other the moment the read passes max: a FIFO
// or standard input are read only that far.
func Read(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, &TooLargeError{Name: name, Max: max}
	}
	return ReadFrom(name, f, max)
}

// ReadFrom reads r, named name in errors, up to max bytes.
func ReadFrom(name string, r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Name: name, Max: max}
	}
	return data, nil
}

// Load is LoadMax with DefaultMaxSize.
func Load(paths ...string) ([]manifest.Document, error) { return LoadMax(DefaultMaxSize, paths...) }

// LoadMax reads the manifests in paths and decodes them with manifest.Decode. A directory
// contributes its *.yaml, *.yml and *.json files, recursively, in lexical order; a file
// is read whatever its name, because a user who names a file means it. An unreadable
// path is an error naming it, and so is a file of more than max bytes, and the files
// together: max bounds each file and 4*max all of them.
func LoadMax(max int64, paths ...string) ([]manifest.Document, error) {
	total := int64(0)
	var docs []manifest.Document
	for _, p := range paths {
		files, err := files(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := Read(f, max)
			var tl *TooLargeError
			if errors.As(err, &tl) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("read manifest: %w", err)
			}
			if total += int64(len(data)); total > TotalMax(max) {
				return nil, &TotalTooLargeError{Names: "in " + strings.Join(paths, " "), Max: TotalMax(max)}
			}
			ds, err := manifest.Decode(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, ds...)
		}
	}
	return docs, nil
}

// files are the manifest files p names: p itself, or the manifests under directory p.
func files(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifest directory %s: %w", p, err)
	}
	slices.Sort(out)
	return out, nil
}
