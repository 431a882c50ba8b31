package kube

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NodeWorkers plays a part for many nodes at once: it follows the nodes Selector picks
// with one informer (one watch for thousands of nodes, not a list of each) and hands
// each node Pending says needs work to Work, on at most Workers goroutines, a node to
// one goroutine at a time. The agent doubles of the controller's tests and the demo's
// stand-in agent are this loop with their own Pending and Work.
type NodeWorkers struct {
	Kube     kubernetes.Interface
	Selector string // label selector of the nodes
	Workers  int    // at most this many nodes worked at once; default 16
	// Pending reports whether the node, as the informer last saw it, needs work.
	Pending func(*corev1.Node) bool
	// Work does it. An error retries the node with backoff, after Failed hears of it
	// (when set); a node Work no longer finds should return nil.
	Work   func(ctx context.Context, n *corev1.Node) error
	Failed func(node string, err error)
}

// Start starts the informer and, once it has synced, the workers, which run until ctx
// ends. wait waits for them to stop.
func (w *NodeWorkers) Start(ctx context.Context) (wait func(), err error) {
	workers := w.Workers
	if workers <= 0 {
		workers = 16
	}
	ctx, cancel := context.WithCancel(ctx)
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	f := kubeinformers.NewSharedInformerFactoryWithOptions(w.Kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = w.Selector }))
	nodes := f.Core().V1().Nodes()
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && w.Pending(n) {
			queue.Add(n.Name)
		}
	}
	stop := func() {
		cancel()
		queue.ShutDown()
		f.Shutdown()
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		stop()
		return nil, fmt.Errorf("nodes %s: %w", w.Selector, err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		stop()
		return nil, fmt.Errorf("nodes %s: the informer did not sync", w.Selector)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				n, err := nodes.Lister().Get(name)
				switch {
				case apierrors.IsNotFound(err):
					err = nil // deleted meanwhile: nothing to do
				case err == nil && w.Pending(n):
					err = w.Work(ctx, n)
				}
				if err != nil && ctx.Err() == nil {
					if w.Failed != nil {
						w.Failed(name, err)
					}
					queue.AddRateLimited(name)
				} else {
					queue.Forget(name)
				}
				queue.Done(name)
			}
		})
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	return func() {
		stop()
		wg.Wait()
	}, nil
}
