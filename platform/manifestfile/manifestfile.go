// Package manifestfile reads manifest files and directories from disk for the offline
// commands (render, and any other that takes paths): the I/O half of core/manifest,
// which decodes bytes and never touches the file system itself.
package manifestfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcotui/mcotui/core/manifest"
)

// Load reads the manifests in paths and decodes them with manifest.Decode. A directory
// contributes its *.yaml, *.yml and *.json files, recursively, in lexical order; a file
// is read whatever its name, because a user who names a file means it. An unreadable
// path is an error naming it.
func Load(paths ...string) ([]manifest.Document, error) {
	var docs []manifest.Document
	for _, p := range paths {
		files, err := files(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read manifest: %w", err)
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
