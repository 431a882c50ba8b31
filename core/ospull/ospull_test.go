package ospull

import (
	"strings"
	"testing"
)

// rpmOSTreeOutput is rpm-ostree rebase's output as an MCO daemon's journal shows it,
// with an ostree chunk added.
const rpmOSTreeOutput = "Pulling manifest: ostree-unverified-registry:quay.io/x/os@sha256:c0c5\n" +
	"Importing: ostree-unverified-registry:quay.io/x/os@sha256:c0c5 (digest: sha256:c0c5)\n" +
	"ostree chunk layers already present: 51\n" +
	"ostree chunk layers needed: 1 (2.0 MB)\n" +
	"custom layers already present: 2\n" +
	"custom layers needed: 2 (18.0\u00a0MB)\n" +
	"[0/3] Fetching ostree chunk sha256:2c4a9e0f3d1b (2.0 MB)...done\n" +
	"[1/3] Fetching layer 55fc5bbdeea1d9e6854 (1.4 MB)...done\n" +
	"[2/3] Fetching layer 9cbe6a42d812decb3ef (16.6 MB)...done\n" +
	"Staging deployment...done\n"

func TestRPMOSTreeLineByLine(t *testing.T) {
	var p Parser
	want := []Progress{
		{}, {}, {}, // manifest, importing, present
		{TotalLayers: 1, TotalBytes: 2e6},
		{TotalLayers: 1, TotalBytes: 2e6},
		{TotalLayers: 3, TotalBytes: 20e6},
		{Layers: 1, Bytes: 2e6, TotalLayers: 3, TotalBytes: 20e6},
		{Layers: 2, Bytes: 3.4e6, TotalLayers: 3, TotalBytes: 20e6},
		{Layers: 3, Bytes: 20e6, TotalLayers: 3, TotalBytes: 20e6},
		{Layers: 3, Bytes: 20e6, TotalLayers: 3, TotalBytes: 20e6},
	}
	for i, l := range strings.SplitAfter(strings.TrimSuffix(rpmOSTreeOutput, "\n"), "\n") {
		_, _ = p.Write([]byte(l))
		if !strings.HasSuffix(l, "\n") {
			_, _ = p.Write([]byte("\n"))
		}
		if got := p.Progress(); got != want[i] {
			t.Fatalf("after %q: %+v, want %+v", l, got, want[i])
		}
	}
}

// The task line is written when the layer starts and finished with "done" when it is
// fetched: the layer counts only then.
func TestRPMOSTreeLayerCountsWhenDone(t *testing.T) {
	var p Parser
	_, _ = p.Write([]byte("custom layers needed: 1 (100.0 MB)\n[0/1] Fetching layer abc (100.0 MB)..."))
	if got := p.Progress(); got.Layers != 0 || got.Bytes != 0 || got.TotalBytes != 100e6 {
		t.Fatalf("before done: %+v", got)
	}
	_, _ = p.Write([]byte("done\n"))
	if got := p.Progress(); got.Layers != 1 || got.Bytes != 100e6 {
		t.Fatalf("after done: %+v", got)
	}
}

func TestOlderRPMOSTreeAndBootc(t *testing.T) {
	var p Parser
	_, _ = p.Write([]byte("ostree chunk layers stored: 3 needed: 2 (1.5 GB)\nFetching ostree chunk sha256:aaaa (1.0 GB)\nFetched ostree chunk sha256:aaaa\n"))
	if got, want := p.Progress(), (Progress{Layers: 1, Bytes: 1e9, TotalLayers: 2, TotalBytes: 1.5e9}); got != want {
		t.Fatalf("older rpm-ostree: %+v, want %+v", got, want)
	}
	var b Parser
	_, _ = b.Write([]byte("layers already present: 3; layers needed: 51 (1.1 GB)\n"))
	if got, want := b.Progress(), (Progress{TotalLayers: 51, TotalBytes: 1.1e9}); got != want {
		t.Fatalf("bootc: %+v, want %+v", got, want)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{
		"300.0\u00a0MB": 300e6, "12 bytes": 12, "1 byte": 1, "1.5 GiB": 1610612736, "2.3 kB": 2300, "0 bytes": 0,
	} {
		if got, ok := ParseSize(in); !ok || got != want {
			t.Errorf("ParseSize(%q) = %d %t, want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "MB", "1 parsec", "-1 MB", "1e400 B", "NaN B"} {
		if got, ok := ParseSize(bad); ok {
			t.Errorf("ParseSize(%q) = %d, want refused", bad, got)
		}
	}
}

func TestOverlongLineSkipped(t *testing.T) {
	var p Parser
	_, _ = p.Write([]byte("custom layers needed: 1 (1 MB)" + strings.Repeat("x", 2*maxLine) + "\ncustom layers needed: 2 (2 MB)\n"))
	if got := p.Progress(); got.TotalLayers != 2 {
		t.Fatalf("%+v", got)
	}
}

// FuzzParser feeds any output, split anywhere: the parser never panics, never goes
// back (bytes and layers fetched only grow), never counts more layers than it saw
// done, and ends where the whole output fed at once ends.
func FuzzParser(f *testing.F) {
	f.Add([]byte(rpmOSTreeOutput), uint8(7))
	f.Add([]byte("layers already present: 0; layers needed: 2 (10.0 MB)\n"), uint8(3))
	f.Add([]byte("Fetching layer a (1 MB)\r\nFetched layer a\nFetched layer a\n"), uint8(1))
	f.Fuzz(func(t *testing.T, out []byte, step uint8) {
		var whole Parser
		_, _ = whole.Write(out)
		var split Parser
		n := int(step%64) + 1
		prev := Progress{}
		for i := 0; i < len(out); i += n {
			_, _ = split.Write(out[i:min(i+n, len(out))])
			p := split.Progress()
			if p.Bytes < prev.Bytes || p.Layers < prev.Layers {
				t.Fatalf("went back: %+v after %+v", p, prev)
			}
			if p.Bytes < 0 || p.TotalBytes < 0 || p.Layers < 0 || p.TotalLayers < 0 {
				t.Fatalf("negative: %+v", p)
			}
			prev = p
		}
		if got, want := split.Progress(), whole.Progress(); got != want {
			t.Fatalf("fed in pieces of %d: %+v, whole: %+v", n, got, want)
		}
		if dones := strings.Count(string(out), "Fetch"); whole.Progress().Layers > dones {
			t.Fatalf("%d layers from %d Fetch lines", whole.Progress().Layers, dones)
		}
	})
}
