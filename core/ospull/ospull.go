// Package ospull reads the progress of an OS image download from what the host's tool
// prints while it runs: rpm-ostree's, through its client (the text of
// rust/src/sysroot_upgrade.rs and ostree-ext's cli.rs layer_progress_format, as an MCO
// daemon's journal shows it on every RHCOS update), and ostree-ext's summary line that
// bootc prints. Pure: it is handed the bytes.
//
// rpm-ostree prints, for a container image:
//
//	Pulling manifest: ostree-unverified-registry:quay.io/x/os@sha256:...
//	Importing: ostree-unverified-registry:... (digest: sha256:...)
//	ostree chunk layers already present: 51
//	ostree chunk layers needed: 3 (300.6 MB)
//	custom layers already present: 2
//	custom layers needed: 2 (18.0 MB)
//	[0/5] Fetching ostree chunk sha256:2c4a9e0f3d1b (120.2 MB)...done
//	[1/5] Fetching layer 55fc5bbdeea1d9e6854 (1.4 MB)...done
//	Staging deployment...done
//
// where each "Fetching" line is written when the layer starts and ends in "done" when
// it is fetched (rpm-ostree's progress task), and sizes are glib's format_size (SI
// units, a no-break space in newer glib). Older rpm-ostree printed "ostree chunk layers
// stored: N needed: M (SIZE)" and a separate "Fetched ostree chunk DIGEST" line, which
// are read too. bootc (and ostree-ext's container CLI) print "layers already present:
// N; layers needed: M (SIZE)"; their per-layer progress is a terminal progress bar,
// not printed without a terminal, so on bootc the totals are known at once and the
// fetched bytes only at the end.
package ospull

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Progress is how far a download is: bytes and layers fetched, of the totals the tool
// announced (zero: not announced yet).
type Progress struct {
	Bytes, TotalBytes   int64
	Layers, TotalLayers int
}

// maxLine bounds the line kept while it is incomplete: a longer one is skipped whole
// (no line of these tools is near it).
const maxLine = 4096

// Parser is fed a tool's output as it comes (Write) and keeps its Progress. Not safe
// for concurrent use.
type Parser struct {
	buf      []byte
	skipping bool // in an overlong line, until its end
	// needed are the announced layers and bytes by kind ("ostree chunk", "custom",
	// "all"): an announcement repeated replaces the one before.
	needed  map[string]needed
	pending map[string]int64 // layer digest -> size, fetching
	fetched map[string]bool  // layer digests fetched (each counted once)
	p       Progress
}

type needed struct {
	layers int
	bytes  int64
}

var (
	// rpm-ostree: "ostree chunk layers needed: 3 (300.6 MB)", "custom layers needed: ...",
	// and the older "ostree chunk layers stored: 1 needed: 3 (300.6 MB)".
	kindNeeded = regexp.MustCompile(`^(ostree chunk|custom) layers (?:stored: \d+ )?needed: (\d+) \(([^()]*)\)`)
	// ostree-ext's summary, printed by bootc: "layers already present: 3; layers needed: 51 (1.1 GB)".
	allNeeded = regexp.MustCompile(`^layers already present: \d+; layers needed: (\d+) \(([^()]*)\)`)
	// "[1/5] Fetching layer 55fc5bbdeea1d9e6854 (1.4 MB)...done", "Fetching ostree chunk sha256:2c4a (1 MB)".
	fetching = regexp.MustCompile(`^(?:\[\d+/\d+\] )?Fetching (ostree chunk|layer) (\S+) \(([^()]*)\)(\.\.\.\s*done)?`)
	// ostree-ext's "Fetched layer sha256:2c4a9e0f3d1b".
	fetchedLine = regexp.MustCompile(`^(?:\[\d+/\d+\] )?Fetched (ostree chunk|layer) (\S+)`)
)

// Write feeds p the next bytes of output. It never fails.
func (ps *Parser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			if !ps.skipping {
				ps.buf = append(ps.buf, b...)
				if len(ps.buf) > maxLine {
					ps.buf, ps.skipping = ps.buf[:0], true
				}
			}
			break
		}
		if !ps.skipping && len(ps.buf)+i <= maxLine {
			ps.buf = append(ps.buf, b[:i]...)
			ps.line(string(ps.buf))
		}
		ps.buf, ps.skipping = ps.buf[:0], false
		b = b[i+1:]
	}
	return n, nil
}

// Progress is how far the download is, from the lines read so far.
func (ps *Parser) Progress() Progress { return ps.p }

func (ps *Parser) line(l string) {
	l = strings.TrimSpace(l)
	switch {
	case kindNeeded.MatchString(l):
		m := kindNeeded.FindStringSubmatch(l)
		ps.announce(m[1], m[2], m[3])
	case allNeeded.MatchString(l):
		m := allNeeded.FindStringSubmatch(l)
		ps.announce("all", m[1], m[2])
	case fetching.MatchString(l):
		m := fetching.FindStringSubmatch(l)
		size, ok := ParseSize(m[3])
		if !ok {
			return
		}
		if m[4] != "" {
			ps.fetch(m[2], size)
			return
		}
		if ps.pending == nil {
			ps.pending = map[string]int64{}
		}
		ps.pending[m[2]] = size
	case fetchedLine.MatchString(l):
		m := fetchedLine.FindStringSubmatch(l)
		ps.fetch(m[2], ps.pending[m[2]])
	}
}

func (ps *Parser) announce(kind, layers, size string) {
	n, err := strconv.Atoi(layers)
	b, ok := ParseSize(size)
	if err != nil || !ok {
		return
	}
	if ps.needed == nil {
		ps.needed = map[string]needed{}
	}
	ps.needed[kind] = needed{layers: n, bytes: b}
	ps.p.TotalLayers, ps.p.TotalBytes = 0, 0
	for _, v := range ps.needed {
		ps.p.TotalLayers = addInt(ps.p.TotalLayers, v.layers)
		ps.p.TotalBytes = add64(ps.p.TotalBytes, v.bytes)
	}
}

func (ps *Parser) fetch(digest string, size int64) {
	if ps.fetched[digest] {
		return
	}
	if ps.fetched == nil {
		ps.fetched = map[string]bool{}
	}
	ps.fetched[digest] = true
	delete(ps.pending, digest)
	ps.p.Layers = addInt(ps.p.Layers, 1)
	ps.p.Bytes = add64(ps.p.Bytes, size)
}

func add64(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func addInt(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// units are glib's format_size units (SI by default, IEC with G_FORMAT_SIZE_IEC_UNITS)
// and the bare "bytes"/"byte" of sizes under 1 kB.
var units = map[string]float64{
	"": 1, "b": 1, "byte": 1, "bytes": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15, "eb": 1e18,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50, "eib": 1 << 60,
}

// ParseSize reads a size as glib prints it ("1.4 MB", "18.0\u00a0MB", "12 bytes",
// "1.5 GiB"), in bytes.
func ParseSize(s string) (int64, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\u00a0", " "))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	mul, ok := units[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, false
	}
	v := f * mul
	if v >= math.MaxInt64/2 {
		return 0, false
	}
	return int64(math.Round(v)), true
}
