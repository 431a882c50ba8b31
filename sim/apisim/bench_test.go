package apisim

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
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

// BenchmarkAgents300 is the demo's shape end to end: 300 nodeagent.NodeAgents, each with its
// own clients watching its Node and MachineConfigNode by name over HTTP. One op is a
// write to one node until its agent is told of it. It reports the heap in use with
// every agent connected (heap-MiB).
func BenchmarkAgents300(b *testing.B) {
	const n = 300
	ctx := b.Context()
	srv, c := start(b, Options{})
	agents := make([]*nodeagent.NodeAgent, n)
	for i := range n {
		kubetest.CreateBareNode(b, c.Kube, fmt.Sprint("node-", i), nil, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			a, err := nodeagent.NewNodeAgent(ctx, srv.Config(), fmt.Sprint("node-", i), "worker", nodeagent.NodeAgentOptions{})
			if err != nil {
				errs <- err
				return
			}
			agents[i] = a
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	defer func() {
		for _, a := range agents {
			a.Close()
		}
	}()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := float64(ms.HeapInuse) / (1 << 20)
	for _, a := range agents { // the creates' notifications
		select {
		case <-a.Changes():
		default:
		}
	}
	i := 0
	for b.Loop() {
		a := agents[i%n]
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"n":"%d"}}}`, i)
		if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, a.Name(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		<-a.Changes()
		i++
	}
	b.ReportMetric(heap, "heap-MiB") // after the loop: b.Loop's start clears metrics
}
