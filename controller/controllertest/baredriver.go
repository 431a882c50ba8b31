package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// BareDriver is the least a rollout driver can do, the floor the controller's
// benchmark measures mcotui's controller against on the same machine, API server and
// agents: it follows the nodes with an informer and, in the informer's handler of each
// node's Done at the target, gives the target to the next node (in name order) with
// one merge patch of its desiredConfig, so that MaxUnavailable nodes are updating at
// any time. It plans nothing, reads no pool, writes no taint and no status: no driver
// that reacts to the watch event of a Done can target the next node sooner, or with
// fewer writes.
type BareDriver struct {
	Kube           kubernetes.Interface
	Selector       string // label selector of the nodes it drives
	MaxUnavailable int

	nodes corelisters.NodeLister
	mu    sync.Mutex
	roll  *bareRollout // the rollout under way, nil between rollouts
}

// bareRollout is one Roll: the nodes in the order they get the target, how many got
// it, and which are Done.
type bareRollout struct {
	target string
	order  []string
	next   int
	done   map[string]bool
	over   chan struct{} // closed when every node is Done
	failed chan error    // the first write that failed
}

// Start runs the informer until the test or benchmark ends, and returns once it has
// synced.
func (d *BareDriver) Start(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := kubeinformers.NewSharedInformerFactoryWithOptions(d.Kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = d.Selector }))
	nodes := f.Core().V1().Nodes()
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			if n, ok := cur.(*corev1.Node); ok {
				d.observe(ctx, n)
			}
		},
	}); err != nil {
		cancel()
		tb.Fatalf("bare driver of nodes %s: %v", d.Selector, err)
	}
	d.nodes = nodes.Lister()
	f.Start(ctx.Done())
	tb.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		tb.Fatalf("bare driver of nodes %s: informer did not sync", d.Selector)
	}
}

// Roll gives target to every node, MaxUnavailable at a time, and returns when all
// of them are Done at it, a write fails (the node would never be Done), or ctx ends.
func (d *BareDriver) Roll(ctx context.Context, target string) error {
	nodes, err := d.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	r := &bareRollout{target: target, done: map[string]bool{}, over: make(chan struct{}), failed: make(chan error, 1)}
	for _, n := range nodes {
		r.order = append(r.order, n.Name)
	}
	slices.Sort(r.order)
	var first []string
	d.mu.Lock()
	d.roll = r
	for r.next < len(r.order) && r.next < d.MaxUnavailable {
		first = append(first, r.order[r.next])
		r.next++
	}
	d.mu.Unlock()
	for _, name := range first {
		go d.target(ctx, r, name)
	}
	select {
	case <-r.over:
	case err = <-r.failed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	d.mu.Lock()
	d.roll = nil
	d.mu.Unlock()
	return err
}

// observe counts n's Done at the target and, when it frees a slot, targets the next
// node: in the handler, with nothing queued between the event and the write.
func (d *BareDriver) observe(ctx context.Context, n *corev1.Node) {
	d.mu.Lock()
	r := d.roll
	if r == nil || r.done[n.Name] || nodeanno.Current(n) != r.target || nodeanno.State(n) != nodeanno.StateDone {
		d.mu.Unlock()
		return
	}
	r.done[n.Name] = true
	next := ""
	if r.next < len(r.order) {
		next = r.order[r.next]
		r.next++
	}
	if len(r.done) == len(r.order) {
		close(r.over)
	}
	d.mu.Unlock()
	if next != "" {
		go d.target(ctx, r, next)
	}
}

// target sets the desiredConfig of node name to r's target.
func (d *BareDriver) target(ctx context.Context, r *bareRollout, name string) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{nodeanno.DesiredConfigKey: r.target}}})
	if err == nil {
		_, err = d.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bare-driver"})
	}
	if err != nil {
		select {
		case r.failed <- fmt.Errorf("bare driver: target node %s at %s: %w", name, r.target, err):
		default:
		}
	}
}
