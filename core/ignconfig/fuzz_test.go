package ignconfig

import (
	"bytes"
	"errors"
	"path"
	"strings"
	"testing"
	"unicode"
)

// FuzzContentsLimit decodes arbitrary sources under arbitrary limits: no input may
// panic, yield more than the limit, or make DecodedSize and ContentsLimit disagree;
// past the limit the error is a TooLargeError.
func FuzzContentsLimit(f *testing.F) {
	f.Add("data:,hello%0A", "", uint16(3))
	f.Add("data:;base64,H4sIAAAAAAAA/0rNyckHBAAA//8gMDpCBgAAAA==", "gzip", uint16(5))
	f.Add("data:;base64,QUFBQUFB", "", uint16(4))
	f.Add("data:text/plain,%E2%9C%93", "", uint16(0))
	f.Fuzz(func(t *testing.T, source, compression string, max uint16) {
		fl := file(&source, &compression, nil)
		lim := int64(max)
		data, err := ContentsLimit(fl, lim)
		n, serr := DecodedSize(fl, lim)
		if (err == nil) != (serr == nil) {
			t.Fatalf("ContentsLimit error %v, DecodedSize error %v", err, serr)
		}
		if err != nil {
			if errors.As(err, new(*TooLargeError)) != errors.As(serr, new(*TooLargeError)) {
				t.Fatalf("ContentsLimit error %v, DecodedSize error %v", err, serr)
			}
			return
		}
		if int64(len(data)) > lim || n != int64(len(data)) {
			t.Fatalf("%d bytes (DecodedSize %d) under a limit of %d", len(data), n, lim)
		}
		// Within a larger limit the same bytes come back.
		if more, err := ContentsLimit(fl, lim+1); err != nil || !bytes.Equal(more, data) {
			t.Fatalf("with a larger limit: %q, %v; was %q", more, err, data)
		}
	})
}

// FuzzNames: a unit or drop-in name that passes its check names a file right in its
// directory, with no control character; a file path that passes is not on a kernel
// filesystem.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"hello.service", "../../../etc/cron.d/evil.service", "a\x1b[2J.service",
		"getty@tty1.service", "10-x.conf", "..", ".", "/dev/zero", "/etc/x", "/proc/../dev/sda", "/sys"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		inDir := func(dir string) bool {
			p := path.Join(dir, name)
			return path.Dir(p) == dir && path.Base(p) == name && !strings.ContainsFunc(name, unicode.IsControl)
		}
		if CheckUnitName(name) == nil && !inDir(UnitDir) {
			t.Fatalf("unit name %q accepted, and leads to %s", name, path.Join(UnitDir, name))
		}
		if CheckDropinName(name) == nil && !inDir(UnitDir+"/x.service.d") {
			t.Fatalf("drop-in name %q accepted, and leads to %s", name, path.Join(UnitDir, "x.service.d", name))
		}
		if CheckFilePath(name) == nil {
			clean := path.Clean(name)
			for _, d := range specialDirs {
				if clean == d || strings.HasPrefix(clean, d+"/") {
					t.Fatalf("file path %q accepted, and is under %s", name, d)
				}
			}
			if strings.ContainsFunc(name, unicode.IsControl) {
				t.Fatalf("file path %q accepted with a control character", name)
			}
		}
	})
}
