package interactive

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The TUI's heap is mostly its caches (some 45 MB at 5,000 nodes); what it allocates
// beyond them comes in bursts: the initial lists (tens of megabytes of JSON), a
// rollout wave updating a thousand MachineConfigNodes. After each, the Go runtime
// keeps the freed pages and hands them back to the system only slowly, so the
// process's memory would stand at its highest burst's mark. trimMemory hands them back
// once a burst is over, so that the memory after a burst is that before it.

// trimAfter is how much the program must have allocated since the last trim for a
// quiet interval to trim again: well above what a minute of redrawing allocates, so
// that a program at rest seldom trims.
const trimAfter = 16 << 20

// quietAlloc is the most a program allocates in an interval that counts as quiet.
const quietAlloc = 1 << 20

const allocsMetric = "/gc/heap/allocs:bytes"

// trimMemory returns freed memory to the system, every interval, when the program has
// allocated trimAfter since it last did and the last interval was quiet. It returns
// when ctx ends.
func trimMemory(ctx context.Context, interval time.Duration) {
	sample := []metrics.Sample{{Name: allocsMetric}}
	read := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0 // not this runtime's metric: nothing is ever trimmed
		}
		return sample[0].Value.Uint64()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var tr trimmer
	tr.lastTrim, tr.last = read(), read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if tr.observe(read()) {
			debug.FreeOSMemory()
		}
	}
}

// trimmer decides when to trim from the running total of bytes allocated.
type trimmer struct {
	lastTrim, last uint64
}

// observe takes the total allocated now and reports whether to trim.
func (t *trimmer) observe(total uint64) bool {
	interval := total - t.last
	t.last = total
	if total-t.lastTrim < trimAfter || interval > quietAlloc {
		return false
	}
	t.lastTrim = total
	return true
}
