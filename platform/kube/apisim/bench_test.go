package apisim

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// BenchmarkFanOut500 is one write to a node while 500 watchers, each selecting one
// node, watch: what a demo of 500 nodes costs, each agent watching its own Node.
// byName selects with metadata.name (indexed: the write reaches one watcher); byLabel
// selects with a label (every watcher's selector is evaluated on every write);
// noWatchers is the write alone, for comparison.
func BenchmarkFanOut500(b *testing.B) {
	for _, sel := range []string{"byName", "byLabel", "noWatchers"} {
		b.Run(sel, func(b *testing.B) {
			const nodes = 500
			s := newStore(clock.RealClock{}, DefaultWatchHistory, DefaultWatchBuffer)
			col := s.cols[corev1.SchemeGroupVersion.WithResource("nodes")]
			var wg sync.WaitGroup
			var watchers []*watcher
			for i := range nodes {
				name := fmt.Sprint("node-", i)
				m, err := col.res.decode(fmt.Appendf(nil, `{"metadata":{"name":%q,"labels":{"node":%q}}}`, name, name))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.create(col, "", m, writeMeta{manager: "bench"}); err != nil {
					b.Fatal(err)
				}
				if sel == "noWatchers" {
					continue
				}
				field, label := "metadata.name="+name, ""
				if sel == "byLabel" {
					field, label = "", "node="+name
				}
				f, err := newFilter("", label, field)
				if err != nil {
					b.Fatal(err)
				}
				w, _, err := s.watch(col, f, watchOptions{})
				if err != nil {
					b.Fatal(err)
				}
				watchers = append(watchers, w)
				wg.Go(func() {
					for range w.ch {
					}
				})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				name := fmt.Sprint("node-", i%nodes)
				patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"n":"%d"}}}`, i)
				if _, err := s.patch(col, "", name, "application/merge-patch+json", patch, writeMeta{manager: "bench"}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			s.mu.RLock()
			for _, w := range watchers {
				if w.gone {
					b.Fatalf("a watcher was dropped: the benchmark measured less than every delivery")
				}
			}
			s.mu.RUnlock()
			s.close()
			wg.Wait()
		})
	}
}
