package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
)

// verify checks the structure of a bbolt file with plain reads before bbolt maps it.
//
// bbolt trusts its pages: it turns page numbers and element offsets into unsafe
// pointers into its memory map. On a damaged file those pointers can land past the map
// (a fault) or inside the Go heap, where the garbage collector finds them and stops the
// process ("found bad pointer in Go heap") — no recover() helps there. So every page
// reachable from the meta page bbolt will use is checked here first: page numbers below the
// high-water mark and inside the file, headers that name their own page, element
// offsets inside their page, inline buckets inside their value, no cycles. What passes
// is safe for bbolt to read; what fails is a CorruptError and bbolt never sees it.
//
// The layout is bbolt's on-disk format (go.etcd.io/bbolt/internal/common), which is
// stable across bbolt versions (version 2).
func verify(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &readError{err: err}
	}
	metas := findMetas(data)
	if len(metas) == 0 {
		return errors.New("no valid meta page: not a bbolt file, or both meta pages are damaged")
	}
	// bbolt reads the tree of the valid meta page with the highest transaction id, and
	// only that one is whole: the pages of the older tree may already be reused.
	m := metas[0]
	for _, o := range metas[1:] {
		if o.txid > m.txid {
			m = o
		}
	}
	if err := m.verify(data); err != nil {
		return fmt.Errorf("meta page of transaction %d: %w", m.txid, err)
	}
	return nil
}

// readError is verify's failure to read the file at all, which says nothing of its
// contents.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	elementSize     = 16 // branch and leaf elements are both 16 bytes
	metaSize        = 64 // the meta struct up to and including its checksum
	branchFlag      = 0x01
	leafFlag        = 0x02
	freelistFlag    = 0x10
	bucketLeafFlag  = 0x01
	noFreelist      = ^uint64(0)
	maxTreeDepth    = 64
	minPageSize     = 512
	maxPageSize     = 1 << 16
	bucketHeaderLen = 16 // root page id and sequence
)

var le = binary.LittleEndian

type meta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	hwm      uint64 // the high-water mark: the first page id never allocated
	txid     uint64
}

// findMetas returns the valid meta pages, found where bbolt looks for them: the first
// page, and the second page at the first page's page size, or when the first page is
// damaged, at the first page size whose second page holds a valid meta.
func findMetas(data []byte) []meta {
	if m0, ok := readMeta(data, 0); ok {
		out := []meta{m0}
		if m1, ok := readMeta(data, int(m0.pageSize)); ok && m1.pageSize == m0.pageSize {
			out = append(out, m1)
		}
		return out
	}
	for ps := minPageSize; ps <= maxPageSize; ps *= 2 {
		if m, ok := readMeta(data, ps); ok && int(m.pageSize) == ps {
			return []meta{m}
		}
	}
	return nil
}

func readMeta(data []byte, off int) (meta, bool) {
	if off+pageHeaderSize+metaSize > len(data) {
		return meta{}, false
	}
	b := data[off+pageHeaderSize : off+pageHeaderSize+metaSize]
	if le.Uint32(b[0:]) != boltMagic || le.Uint32(b[4:]) != boltVersion {
		return meta{}, false
	}
	h := fnv.New64a()
	h.Write(b[:56])
	if h.Sum64() != le.Uint64(b[56:]) {
		return meta{}, false
	}
	return meta{
		pageSize: uint64(le.Uint32(b[8:])),
		root:     le.Uint64(b[16:]),
		freelist: le.Uint64(b[32:]),
		hwm:      le.Uint64(b[40:]),
		txid:     le.Uint64(b[48:]),
	}, true
}

func (m meta) verify(data []byte) error {
	ps := m.pageSize
	switch {
	case ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0:
		return fmt.Errorf("page size %d", ps)
	case m.hwm < 3 || m.hwm > uint64(len(data))/ps:
		return fmt.Errorf("high-water mark page %d is beyond the file's %d bytes", m.hwm, len(data))
	}
	w := walker{data: data, m: m, seen: map[uint64]bool{}}
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	return w.tree(m.root, 0)
}

type walker struct {
	data []byte
	m    meta
	seen map[uint64]bool
}

// page returns the bytes of page id, overflow pages included, after checking its header.
func (w walker) page(id uint64, wantFlags uint16) ([]byte, error) {
	ps := w.m.pageSize
	if id < 2 || id >= w.m.hwm {
		return nil, fmt.Errorf("page %d is outside the data pages 2..%d", id, w.m.hwm-1)
	}
	off := id * ps
	hdr := w.data[off : off+pageHeaderSize]
	if got := le.Uint64(hdr); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	if flags := le.Uint16(hdr[8:]); flags != wantFlags && !(wantFlags == branchFlag|leafFlag && (flags == branchFlag || flags == leafFlag)) {
		return nil, fmt.Errorf("page %d has flags %#x", id, flags)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if overflow >= w.m.hwm-id {
		return nil, fmt.Errorf("page %d overflows past the high-water mark", id)
	}
	return w.data[off : off+(overflow+1)*ps], nil
}

func (w walker) freelist(id uint64) error {
	p, err := w.page(id, freelistFlag)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	count, start := uint64(le.Uint16(p[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF {
		if len(p) < pageHeaderSize+8 {
			return fmt.Errorf("freelist page %d is too short", id)
		}
		count, start = le.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > (uint64(len(p))-start)/8 {
		return fmt.Errorf("freelist page %d claims %d ids", id, count)
	}
	for i := uint64(0); i < count; i++ {
		if free := le.Uint64(p[start+8*i:]); free < 2 || free >= w.m.hwm {
			return fmt.Errorf("freelist page %d lists page %d", id, free)
		}
	}
	return nil
}

// tree checks the bucket tree rooted at page id.
func (w walker) tree(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: tree deeper than %d", id, maxTreeDepth)
	}
	if w.seen[id] {
		return fmt.Errorf("page %d is reachable twice", id)
	}
	w.seen[id] = true
	p, err := w.page(id, branchFlag|leafFlag)
	if err != nil {
		return err
	}
	return w.node(p, id, depth)
}

// node checks the elements of a branch or leaf page p (a real page, or an inline bucket
// held in a value) and descends into what they point to.
func (w walker) node(p []byte, id uint64, depth int) error {
	flags, count := le.Uint16(p[8:]), uint64(le.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > uint64(len(p)) {
		return fmt.Errorf("page %d claims %d elements", id, count)
	}
	for i := uint64(0); i < count; i++ {
		e := pageHeaderSize + i*elementSize
		el := p[e : e+elementSize]
		switch flags {
		case branchFlag:
			pos, ksize, child := uint64(le.Uint32(el)), uint64(le.Uint32(el[4:])), le.Uint64(el[8:])
			if e+pos+ksize > uint64(len(p)) {
				return fmt.Errorf("page %d element %d: key outside the page", id, i)
			}
			if err := w.tree(child, depth+1); err != nil {
				return err
			}
		case leafFlag:
			eflags, pos, ksize, vsize := le.Uint32(el), uint64(le.Uint32(el[4:])), uint64(le.Uint32(el[8:])), uint64(le.Uint32(el[12:]))
			end := e + pos + ksize + vsize
			if end > uint64(len(p)) {
				return fmt.Errorf("page %d element %d: key or value outside the page", id, i)
			}
			if eflags&bucketLeafFlag == 0 {
				continue
			}
			value := p[e+pos+ksize : end]
			if err := w.bucket(value, id, depth); err != nil {
				return fmt.Errorf("page %d element %d: %w", id, i, err)
			}
		default:
			return fmt.Errorf("page %d has flags %#x", id, flags)
		}
	}
	return nil
}

// bucket checks a nested bucket's header and its tree, or its inline page.
func (w walker) bucket(value []byte, id uint64, depth int) error {
	if len(value) < bucketHeaderLen {
		return errors.New("bucket header too short")
	}
	if root := le.Uint64(value); root != 0 {
		return w.tree(root, depth+1)
	}
	inline := value[bucketHeaderLen:]
	if len(inline) < pageHeaderSize || le.Uint16(inline[8:]) != leafFlag {
		return errors.New("inline bucket is not a leaf page")
	}
	return w.node(inline, id, depth+1)
}
