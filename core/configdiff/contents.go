package configdiff

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// Bounds of ContentDiffs, so that a config of large or many files still reads in a
// terminal and costs the reader little: a side larger than MaxDiffFile is not decoded
// for a diff, and a file's diff is cut after MaxDiffLines lines.
const (
	MaxDiffFile  = 256 << 10
	MaxDiffLines = 300
)

// FileDiff is how the contents (and mode) of one file differ between two configs, for
// people: the line-level change of a text file as a unified diff, or the reason it is
// not shown.
type FileDiff struct {
	Path string
	Kind ChangeKind
	// OldMode and NewMode are the permission bits; equal when the mode did not change
	// (the side a file is missing from has the other side's).
	OldMode, NewMode int
	// Binary: a side is not UTF-8 text (or holds a NUL byte); its contents are not
	// shown, only named.
	Binary bool
	// Hunks are the unified diff's hunks, "@@ -1,3 +1,4 @@" and the lines under them
	// (" ", "-", "+" and "\ No newline at end of file"), without the file header; none
	// when the contents are equal (a change of mode or owner), binary or unreadable.
	Hunks []string
	// Truncated: the diff was longer than MaxDiffLines and Hunks are its start; Lines is
	// the whole diff's length.
	Truncated bool
	Lines     int
	// Err is why a side's contents could not be read for the diff: a source that is not
	// a data: URL, a side larger than MaxDiffFile, a bad encoding.
	Err error
}

// ContentDiffs returns the FileDiff of each file files names (Changes.Files of the two
// configs), added first, then changed, then removed, each sorted by path.
func ContentDiffs(old, new Config, files EntryChanges) []FileDiff {
	oldByPath := filesByPath(old.Ignition.Storage.Files)
	newByPath := filesByPath(new.Ignition.Storage.Files)
	out := make([]FileDiff, 0, files.Len())
	for _, e := range []struct {
		kind  ChangeKind
		paths []string
	}{{Added, files.Added}, {Changed, files.Changed}, {Removed, files.Removed}} {
		for _, p := range e.paths {
			out = append(out, contentDiff(p, e.kind, oldByPath[p], newByPath[p]))
		}
	}
	return out
}

// filesByPath keys files by path, later entries winning as in diffFiles.
func filesByPath(fs []types.File) map[string]*types.File {
	m := make(map[string]*types.File, len(fs))
	for i := range fs {
		m[fs[i].Path] = &fs[i]
	}
	return m
}

func contentDiff(path string, kind ChangeKind, of, nf *types.File) FileDiff {
	d := FileDiff{Path: path, Kind: kind}
	read := func(f *types.File) ([]byte, int, error) {
		if f == nil {
			return nil, -1, nil
		}
		b, err := ignconfig.ContentsLimit(*f, MaxDiffFile)
		return b, ignconfig.FileMode(*f), err
	}
	ob, om, oerr := read(of)
	nb, nm, nerr := read(nf)
	if om < 0 {
		om = nm
	}
	if nm < 0 {
		nm = om
	}
	d.OldMode, d.NewMode = om, nm
	if err := errors.Join(oerr, nerr); err != nil {
		var tl *ignconfig.TooLargeError
		if errors.As(err, &tl) {
			d.Err = errors.New("larger than the " + sizeText(MaxDiffFile) + " a diff shows")
		} else {
			d.Err = err
		}
		return d
	}
	if bytes.Equal(ob, nb) {
		return d
	}
	if binary(ob) || binary(nb) {
		d.Binary = true
		return d
	}
	u := udiff.Unified("a"+path, "b"+path, string(ob), string(nb))
	lines := strings.Split(strings.TrimSuffix(u, "\n"), "\n")
	// The first two lines are the "--- a/path" and "+++ b/path" header.
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "--- ") && strings.HasPrefix(lines[1], "+++ ") {
		lines = lines[2:]
	}
	d.Lines = len(lines)
	if len(lines) > MaxDiffLines {
		lines, d.Truncated = lines[:MaxDiffLines], true
	}
	d.Hunks = lines
	return d
}

// binary reports whether b is not text a terminal can show line by line.
func binary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
