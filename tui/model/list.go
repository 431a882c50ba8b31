package model

import (
	"slices"
	"sort"
)

// SortKey is the order of a List.
type SortKey uint8

// Sort orders. Every order breaks ties by name, so a List's order is total and the same
// on every run. Names and configs compare numeric-aware: worker-2 before worker-10.
const (
	SortName    SortKey = iota
	SortPool            // pool, then name
	SortPhase           // progress through the phases, then name
	SortAge             // longest in its current phase first
	SortStatus          // readiness: NotReady first, then cordoned, then Ready
	SortCurrent         // current config
	SortDesired         // desired config
	numSortKeys
)

// NumSortKeys is how many orders there are.
const NumSortKeys = int(numSortKeys)

func (k SortKey) String() string {
	return [...]string{"name", "pool", "phase", "time in phase", "status", "current", "desired"}[k]
}

// Next is the order after k, for a key that cycles through them.
func (k SortKey) Next() SortKey { return (k + 1) % numSortKeys }

// Query is what a List shows: the nodes of one pool (or all) that pass a filter, in an
// order.
type Query struct {
	Pool   string // "" for every pool
	Filter Filter
	Sort   SortKey
	Desc   bool
}

// List is a sorted, filtered view of a Store's nodes, kept up to date from the Changes of
// each Apply rather than recomputed: a burst touching a few nodes moves a few rows, and
// View never sorts or filters.
type List struct {
	store *Store
	q     Query
	rows  []*Node

	nameWidth, poolWidth int
	// prefix and suffix are how many leading and trailing bytes every row's name shares
	// (OpenShift's are "<infra id>-worker-<zone>-" and a random end): what a cut name can
	// drop and still tell rows apart. Like the widths, they only shrink until a rebuild.
	prefix, suffix int
	first          string // a row's name, to compare the next with; "" when no rows
}

// NewList returns a list of every node of s, by name.
func NewList(s *Store) *List {
	l := &List{store: s}
	l.rebuild()
	return l
}

// Query is the list's query.
func (l *List) Query() Query { return l.q }

// SetQuery changes what the list shows, which re-filters and re-sorts it.
func (l *List) SetQuery(q Query) {
	l.q = q
	l.rebuild()
}

// Len is the number of rows.
func (l *List) Len() int { return len(l.rows) }

// At returns row i.
func (l *List) At(i int) *Node { return l.rows[i] }

// Rows returns rows [from, to), clamped to the list. The slice is the list's own.
func (l *List) Rows(from, to int) []*Node {
	from, to = max(0, min(from, len(l.rows))), max(0, min(to, len(l.rows)))
	return l.rows[from:to]
}

// Index returns the row of the node named name, or -1.
func (l *List) Index(name string) int {
	n := l.store.Node(name)
	if n == nil || !l.match(n) {
		return -1
	}
	if i := l.search(n); i < len(l.rows) && l.rows[i] == n {
		return i
	}
	return -1
}

// NameWidth and PoolWidth are the widest name and pool among the rows (never narrower
// than the rows need, though possibly wider after rows leave), so the grid sizes its
// columns without scanning the rows on each View.
func (l *List) NameWidth() int { return l.nameWidth }

// PoolWidth: see NameWidth.
func (l *List) PoolWidth() int { return l.poolWidth }

func (l *List) match(n *Node) bool {
	return (l.q.Pool == "" || n.Pool == l.q.Pool) && l.q.Filter.Match(n)
}

func (l *List) less(a, b *Node) bool { return l.cmp(a, b) < 0 }

func (l *List) cmp(a, b *Node) int {
	c := 0
	switch l.q.Sort {
	case SortPool:
		c = Natural(a.Pool, b.Pool)
	case SortStatus:
		c = cmpInt(statusRank(a), statusRank(b))
	case SortCurrent:
		c = Natural(a.Current, b.Current)
	case SortDesired:
		c = Natural(a.Desired, b.Desired)
	case SortPhase:
		c = cmpInt(a.Phase, b.Phase)
	case SortAge:
		// Oldest transition first; nodes outside any phase (zero time) last.
		switch az, bz := a.Since.IsZero(), b.Since.IsZero(); {
		case az && !bz:
			c = 1
		case bz && !az:
			c = -1
		default:
			c = a.Since.Compare(b.Since)
		}
	}
	if c == 0 {
		c = Natural(a.Name, b.Name)
	}
	if l.q.Desc {
		c = -c
	}
	return c
}

// sameKey reports whether a and b sort to the same place, so that b can replace a in
// place.
func (l *List) sameKey(a, b *Node) bool {
	switch l.q.Sort {
	case SortPool:
		return a.Pool == b.Pool
	case SortPhase:
		return a.Phase == b.Phase
	case SortAge:
		return a.Since.Equal(b.Since)
	case SortStatus:
		return statusRank(a) == statusRank(b)
	case SortCurrent:
		return a.Current == b.Current
	case SortDesired:
		return a.Desired == b.Desired
	}
	return true
}

// search returns the first row not before n.
func (l *List) search(n *Node) int {
	return sort.Search(len(l.rows), func(i int) bool { return !l.less(l.rows[i], n) })
}

func (l *List) rebuild() {
	l.rows = l.rows[:0]
	l.nameWidth, l.poolWidth = 0, 0
	l.prefix, l.suffix, l.first = 0, 0, ""
	l.store.Each(func(n *Node) {
		if l.match(n) {
			l.rows = append(l.rows, n)
			l.widen(n)
		}
	})
	slices.SortFunc(l.rows, l.cmp)
}

func (l *List) widen(n *Node) {
	l.nameWidth = max(l.nameWidth, len(n.Name))
	l.poolWidth = max(l.poolWidth, len(n.Pool))
	if l.first == "" {
		l.first, l.prefix, l.suffix = n.Name, len(n.Name), len(n.Name)
		return
	}
	l.prefix, l.suffix = sharedEnds(l.first, n.Name, l.prefix, l.suffix)
}

// sharedEnds narrows pre and suf, the leading and trailing bytes a and b are known to
// share at most, to what they share, never overlapping in b.
func sharedEnds(a, b string, pre, suf int) (int, int) {
	pre = min(pre, len(a), len(b))
	for i := range pre {
		if a[i] != b[i] {
			pre = i
			break
		}
	}
	suf = min(suf, len(a), len(b))
	for i := range suf {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			suf = i
			break
		}
	}
	return pre, min(suf, len(b)-pre)
}

// SharedEnds are how many leading and trailing bytes every row's name shares: a name
// cut to fit keeps what lies between (layout.Name). Both are 0 with fewer than two rows.
func (l *List) SharedEnds() (prefix, suffix int) {
	if l.nameWidth == 0 || l.first == "" || len(l.rows) < 2 {
		return 0, 0
	}
	return l.prefix, l.suffix
}

// Sync applies the node changes of one Store.Apply. A changed node whose sort key and
// membership did not move is replaced in place; the others are removed and re-inserted
// by binary search, unless so many moved that one sort is cheaper.
func (l *List) Sync(changes []Change) {
	var moved []Change
	for _, c := range changes {
		inOld := c.Old != nil && l.match(c.Old)
		inNew := c.New != nil && l.match(c.New)
		if !inOld && !inNew {
			continue
		}
		if inOld && inNew && l.sameKey(c.Old, c.New) {
			if i := l.search(c.Old); i < len(l.rows) && l.rows[i] == c.Old {
				l.rows[i] = c.New
				continue
			}
		}
		moved = append(moved, c)
	}
	if len(moved) == 0 {
		return
	}
	// Each insert or removal moves half the slice on average; past this many a fresh
	// sort (n log n comparisons) is the cheaper way.
	if len(moved) > max(64, len(l.rows)/8) {
		l.rebuild()
		return
	}
	for _, c := range moved {
		if c.Old != nil {
			if i := l.search(c.Old); i < len(l.rows) && l.rows[i] == c.Old {
				l.rows = slices.Delete(l.rows, i, i+1)
			}
		}
		if c.New != nil && l.match(c.New) {
			l.rows = slices.Insert(l.rows, l.search(c.New), c.New)
			l.widen(c.New)
		}
	}
}

// statusRank orders readiness worst first: not Ready, then unknown, then cordoned.
func statusRank(n *Node) int {
	r := 0
	switch n.Ready {
	case "Ready":
		r = 4
	case "":
		r = 2
	}
	if !n.Unschedulable {
		r++
	}
	return r
}

// Natural compares a and b as people read names: runs of digits by their value, so
// that worker-2 sorts before worker-10. Equal values with different digits (01 and 1)
// fall back to the bytes, so the order stays total.
func Natural(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			da, db := trimZeros(a[si:i]), trimZeros(b[sj:j])
			if len(da) != len(db) {
				return cmpInt(len(da), len(db))
			}
			if c := cmpStr(da, db); c != 0 {
				return c
			}
			continue
		}
		if ca != cb {
			return cmpInt(int(ca), int(cb))
		}
		i++
		j++
	}
	if c := cmpInt(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return cmpStr(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int { return a - b }
