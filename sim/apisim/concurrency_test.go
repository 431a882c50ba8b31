package apisim

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestConcurrentWriters: clients incrementing one counter through read-modify-write
// with retries on conflict lose no increment, and a watcher sees every write once, in
// resourceVersion order.
func TestConcurrentWriters(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	kubetest.CreateBareNode(t, c.Kube, "counter", nil, nil)
	w, err := c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=counter"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const writers, each = 8, 10
	nodes := c.Kube.CoreV1().Nodes()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				// Eight writers on one object: more retries than client-go's default.
				backoff := wait.Backoff{Steps: 1000, Duration: time.Millisecond, Jitter: 1}
				err := retry.RetryOnConflict(backoff, func() error {
					n, err := nodes.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					v, _ := strconv.Atoi(n.Annotations["count"])
					if n.Annotations == nil {
						n.Annotations = map[string]string{}
					}
					n.Annotations["count"] = strconv.Itoa(v + 1)
					_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := nodes.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Annotations["count"]; got != fmt.Sprint(writers*each) {
		t.Fatalf("count %s after %d increments", got, writers*each)
	}
	last := uint64(0)
	for i := 1; i <= writers*each; i++ {
		ev := <-w.ResultChan()
		node, ok := ev.Object.(*corev1.Node)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("event %d: %s %v", i, ev.Type, ev.Object)
		}
		rv, _ := strconv.ParseUint(node.ResourceVersion, 10, 64)
		if rv <= last || node.Annotations["count"] != strconv.Itoa(i) {
			t.Fatalf("event %d: resourceVersion %d after %d, count %s", i, rv, last, node.Annotations["count"])
		}
		last = rv
	}
}
