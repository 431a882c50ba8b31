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

// MaxContents is the default bound on the decoded size of one file (Limits.File). A
// rendered MachineConfig lives in etcd (1.5 MiB per object by default), so a legitimate
// file is far smaller even after decompression; the bound stops a small gzip stream
// from filling a node's disk or the agent's memory.
const MaxContents = DefaultFileLimit

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
//
// The decoded size is bounded by MaxContents; ContentsLimit takes another bound.
func Contents(f types.File) ([]byte, error) {
	return ContentsLimit(f, MaxContents)
}

// ContentsLimit is Contents with max as the bound on the decoded size, checked while
// decoding: a gzip stream stops being read one byte past max, and a data: URL whose
// encoded length alone says it decodes to more is refused before it is decoded. The
// error then is a *TooLargeError.
func ContentsLimit(f types.File, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := decodeTo(f, max, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodedSize returns the number of bytes f's contents decode to, without holding them:
// decompressed bytes are counted and dropped. It fails as ContentsLimit would.
func DecodedSize(f types.File, max int64) (int64, error) {
	return decodeTo(f, max, io.Discard)
}

// TooLargeError says a file's contents decode to more than the limit.
type TooLargeError struct {
	Path  string
	Limit int64
	// How says how it was found: "its data: URL holds", "it decompresses to".
	How string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("file %s: contents: %s more than %d bytes, the limit of one file (the agent's --max-file-size)", e.Path, e.How, e.Limit)
}

// decodeTo writes f's decoded contents to w, at most max bytes, and returns how many.
func decodeTo(f types.File, max int64, w io.Writer) (int64, error) {
	r := f.Contents
	if r.Source == nil {
		if r.Compression != nil && *r.Compression != "" {
			return 0, fmt.Errorf("file %s: contents.compression is %q but there is no contents.source", f.Path, *r.Compression)
		}
		return 0, nil
	}
	raw, err := decodeSource(*r.Source, max)
	if errors.Is(err, errTooLarge) {
		return 0, &TooLargeError{Path: f.Path, Limit: max, How: "its data: URL holds"}
	}
	if err != nil {
		return 0, fmt.Errorf("file %s: contents.source: %w", f.Path, err)
	}
	if r.Verification.Hash != nil {
		if err := verify(raw, *r.Verification.Hash); err != nil {
			return 0, fmt.Errorf("file %s: contents.verification.hash: %w", f.Path, err)
		}
	}
	compression := ""
	if r.Compression != nil {
		compression = *r.Compression
	}
	n, err := decompress(raw, compression, max, w)
	if errors.Is(err, errTooLarge) {
		return 0, &TooLargeError{Path: f.Path, Limit: max, How: "it decompresses to"}
	}
	if err != nil {
		return 0, fmt.Errorf("file %s: contents: %w", f.Path, err)
	}
	return n, nil
}

// errTooLarge is what decodeSource and decompress return past the limit.
var errTooLarge = errors.New("too large")

// decodeSource decodes a data: URL of at most max bytes; other schemes are refused.
func decodeSource(source string, max int64) ([]byte, error) {
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
	if minDecoded(source) > max {
		return nil, errTooLarge
	}
	d, err := dataurl.DecodeString(source)
	if err != nil {
		return nil, fmt.Errorf("invalid data: URL: %w", err)
	}
	if int64(len(d.Data)) > max {
		return nil, errTooLarge
	}
	return d.Data, nil
}

// minDecoded is the least number of bytes a data: URL decodes to, from its length alone:
// base64 packs 3 bytes in 4 characters (whitespace aside, which a MachineConfig's JSON
// does not carry in quantity), and a percent-encoded byte takes at most 3 characters.
func minDecoded(source string) int64 {
	header, payload, ok := strings.Cut(source, ",")
	if !ok {
		return 0
	}
	if strings.HasSuffix(strings.ToLower(header), ";base64") {
		return int64(len(payload)) / 4 * 3 / 2 // halved: leaves room for padding and spaces
	}
	return int64(len(payload)) / 3
}

// decompress undoes contents.compression, "" (none) or "gzip", the two Ignition knows,
// writing at most max bytes to w.
func decompress(raw []byte, compression string, max int64, w io.Writer) (int64, error) {
	switch compression {
	case "":
		n, err := w.Write(raw)
		return int64(n), err
	case "gzip":
	default:
		return 0, fmt.Errorf("compression %q is not supported; use gzip or none", compression)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("gzip: %w", err)
	}
	defer zr.Close()
	// One byte past the limit tells a file of exactly max bytes from a larger one, and
	// nothing past it is ever decompressed.
	n, err := io.Copy(w, io.LimitReader(zr, max+1))
	if err != nil {
		return 0, fmt.Errorf("gzip: %w", err)
	}
	if n > max {
		return 0, errTooLarge
	}
	return n, nil
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
