package ignconfig

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

func file(source, compression, hash *string) types.File {
	f := types.File{Node: types.Node{Path: "/etc/example"}}
	f.Contents.Source = source
	f.Contents.Compression = compression
	f.Contents.Verification.Hash = hash
	return f
}

func ptr(s string) *string { return &s }

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestContents(t *testing.T) {
	hello := []byte("hello world\n")
	sum := sha256.Sum256(hello)
	cases := []struct {
		name   string
		f      types.File
		want   string
		errHas string
	}{
		{name: "no source is empty", f: file(nil, nil, nil), want: ""},
		{name: "percent-encoded", f: file(ptr("data:,hello%20world%0A"), nil, nil), want: "hello world\n"},
		{name: "base64", f: file(ptr("data:;base64,"+base64.StdEncoding.EncodeToString(hello)), nil, nil), want: "hello world\n"},
		{name: "media type and base64", f: file(ptr("data:text/plain;charset=utf-8;base64,"+base64.StdEncoding.EncodeToString(hello)), nil, nil), want: "hello world\n"},
		{name: "gzip", f: file(ptr("data:;base64,"+base64.StdEncoding.EncodeToString(gz(t, hello))), ptr("gzip"), nil), want: "hello world\n"},
		{name: "empty compression is none", f: file(ptr("data:,x"), ptr(""), nil), want: "x"},
		{name: "hash checked", f: file(ptr("data:,hello%20world%0A"), nil, ptr("sha256-"+hex.EncodeToString(sum[:]))), want: "hello world\n"},
		{name: "hash mismatch", f: file(ptr("data:,hello"), nil, ptr("sha256-"+hex.EncodeToString(sum[:]))), errHas: "hash to sha256-"},
		{name: "https refused", f: file(ptr("https://example.com/x"), nil, nil), errHas: "file /etc/example: contents.source: https: URLs are fetched by Ignition at first boot only"},
		{name: "s3 refused", f: file(ptr("s3://bucket/x"), nil, nil), errHas: "s3: URLs"},
		{name: "no scheme", f: file(ptr("hello"), nil, nil), errHas: "no URL scheme"},
		{name: "bad base64", f: file(ptr("data:;base64,!!!"), nil, nil), errHas: "invalid data: URL"},
		{name: "unknown compression", f: file(ptr("data:,x"), ptr("xz"), nil), errHas: `compression "xz" is not supported`},
		{name: "not gzip", f: file(ptr("data:,x"), ptr("gzip"), nil), errHas: "gzip:"},
		{name: "compression without source", f: file(nil, ptr("gzip"), nil), errHas: "no contents.source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Contents(c.f)
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("Contents() error = %v, want one containing %q", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("Contents() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestContentsRefusesGzipBomb(t *testing.T) {
	bomb := gz(t, make([]byte, MaxContents+1))
	_, err := Contents(file(ptr("data:;base64,"+base64.StdEncoding.EncodeToString(bomb)), ptr("gzip"), nil))
	if err == nil || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Fatalf("Contents() error = %v, want the size limit", err)
	}
}

// FuzzContents decodes arbitrary sources and compressions: no input may panic or yield
// more than MaxContents bytes, and any bytes encoded as a base64 data: URL, compressed or
// not, decode to themselves.
func FuzzContents(f *testing.F) {
	f.Add("data:,hello%0A", "", []byte("hello\n"))
	f.Add("data:;base64,aGVsbG8K", "gzip", []byte{0x1f, 0x8b})
	f.Add("data:text/plain;charset=utf-8,%E2%9C%93", "", []byte{})
	f.Add("https://example.com/a", "", []byte("x"))
	f.Fuzz(func(t *testing.T, source, compression string, data []byte) {
		got, err := Contents(file(&source, &compression, nil))
		if err == nil && len(got) > MaxContents {
			t.Fatalf("Contents returned %d bytes, over MaxContents", len(got))
		}
		plain := "data:;base64," + base64.StdEncoding.EncodeToString(data)
		if got, err := Contents(file(&plain, nil, nil)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("base64 round trip of %q: %q, %v", data, got, err)
		}
		zipped := "data:;base64," + base64.StdEncoding.EncodeToString(gz(t, data))
		if got, err := Contents(file(&zipped, ptr("gzip"), nil)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("gzip round trip of %q: %q, %v", data, got, err)
		}
	})
}
