package ignconfig

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// MaxContents bounds the decoded size of one file. A rendered MachineConfig lives in etcd
// (1.5 MiB per object by default), so a legitimate file is far smaller even after
// decompression; the bound stops a small gzip stream from filling a node's disk or the
// agent's memory.
const MaxContents = 64 << 20

// DefaultFileMode is the mode Ignition gives a file whose config sets none.
const DefaultFileMode = 0o644

// FileMode is the permission bits (setuid, setgid and sticky included) f asks for, or
// DefaultFileMode.
func FileMode(f types.File) int {
	if f.Mode != nil {
		return *f.Mode
	}
	return DefaultFileMode
}

// Contents returns the bytes a file entry puts on disk: its contents.source decoded and,
// when contents.compression says so, decompressed. A file without a source is empty, as
// Ignition makes it.
//
// Only data: URLs are accepted, in base64 or percent-encoded form. A running node's agent
// must not depend on a web server or a bucket being reachable in the middle of an update
// (MCO requires data URLs in rendered configs for the same reason), so http, https, s3,
// gs and tftp sources are refused with an error naming the file. contents.verification,
// when set, is checked against the bytes before decompression, as Ignition does.
func Contents(f types.File) ([]byte, error) {
	r := f.Contents
	if r.Source == nil {
		if r.Compression != nil && *r.Compression != "" {
			return nil, fmt.Errorf("file %s: contents.compression is %q but there is no contents.source", f.Path, *r.Compression)
		}
		return []byte{}, nil
	}
	raw, err := decodeSource(*r.Source)
	if err != nil {
		return nil, fmt.Errorf("file %s: contents.source: %w", f.Path, err)
	}
	if r.Verification.Hash != nil {
		if err := verify(raw, *r.Verification.Hash); err != nil {
			return nil, fmt.Errorf("file %s: contents.verification.hash: %w", f.Path, err)
		}
	}
	compression := ""
	if r.Compression != nil {
		compression = *r.Compression
	}
	data, err := decompress(raw, compression)
	if err != nil {
		return nil, fmt.Errorf("file %s: contents: %w", f.Path, err)
	}
	return data, nil
}

// decodeSource decodes a data: URL; other schemes are refused.
func decodeSource(source string) ([]byte, error) {
	u, err := url.Parse(source)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "data":
	case "http", "https", "s3", "gs", "tftp", "arn":
		return nil, fmt.Errorf("%s: URLs are fetched by Ignition at first boot only; the agent applies data: URLs alone. "+
			"Embed the contents in the MachineConfig as a data: URL", u.Scheme)
	case "":
		return nil, errors.New("no URL scheme; give the contents as a data: URL, e.g. data:,hello%0A or data:;base64,aGVsbG8K")
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q; give the contents as a data: URL", u.Scheme)
	}
	d, err := dataurl.DecodeString(source)
	if err != nil {
		return nil, fmt.Errorf("invalid data: URL: %w", err)
	}
	if len(d.Data) > MaxContents {
		return nil, fmt.Errorf("data: URL holds %d bytes, more than the %d the agent writes", len(d.Data), MaxContents)
	}
	return d.Data, nil
}

// decompress undoes contents.compression: "" (none) or "gzip", the two Ignition knows.
func decompress(raw []byte, compression string) ([]byte, error) {
	switch compression {
	case "":
		return raw, nil
	case "gzip":
	default:
		return nil, fmt.Errorf("compression %q is not supported; use gzip or none", compression)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer zr.Close()
	// One byte past the limit tells a file of exactly MaxContents from a larger one.
	data, err := io.ReadAll(io.LimitReader(zr, MaxContents+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if len(data) > MaxContents {
		return nil, fmt.Errorf("gzip: decompresses to more than %d bytes", MaxContents)
	}
	return data, nil
}

// verify checks data against an Ignition hash, "sha512-<hex>" or "sha256-<hex>".
func verify(data []byte, want string) error {
	algo, sum, ok := strings.Cut(want, "-")
	if !ok {
		return fmt.Errorf("%q is not of the form sha512-<hex> or sha256-<hex>", want)
	}
	var h hash.Hash
	switch algo {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return fmt.Errorf("hash function %q is not supported; use sha512 or sha256", algo)
	}
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, sum) {
		return fmt.Errorf("the contents hash to %s-%s, not %s", algo, got, want)
	}
	return nil
}
