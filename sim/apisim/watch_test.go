package apisim

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

func label(t testing.TB, c kubernetes.Interface, node, k, v string) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Patch(kubetest.Context(t), node, types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, k, v), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("label node %s: %v", node, err)
	}
	return n
}

func TestInformers(t *testing.T) {
	ctx := kubetest.Context(t)
	requests := &requestLog{}
	_, c := start(t, Options{Logger: slog.New(requests)})
	kubetest.CreateBareNode(t, c.Kube, "before", nil, nil)
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kf := kubeinformers.NewSharedInformerFactory(c.Kube, 0)
	mf := mcfginformers.NewSharedInformerFactory(c.MachineConfig, 0)
	nodes := kf.Core().V1().Nodes()
	pools := mf.Machineconfiguration().V1().MachineConfigPools()
	var mu sync.Mutex
	var seen []string
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { mu.Lock(); seen = append(seen, "add "+o.(*corev1.Node).Name); mu.Unlock() },
		UpdateFunc: func(_, o any) {
			mu.Lock()
			seen = append(seen, "update "+o.(*corev1.Node).Name+" "+o.(*corev1.Node).Labels["v"])
			mu.Unlock()
		},
		DeleteFunc: func(o any) { mu.Lock(); seen = append(seen, "delete "+o.(*corev1.Node).Name); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	pools.Informer()
	kf.Start(ctx.Done())
	mf.Start(ctx.Done())
	t.Cleanup(kf.Shutdown)
	t.Cleanup(mf.Shutdown)
	for typ, ok := range kf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	for typ, ok := range mf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	if _, err := pools.Lister().Get("worker"); err != nil {
		t.Fatalf("the pool lister after sync: %v", err)
	}

	kubetest.CreateBareNode(t, c.Kube, "after", nil, nil)
	label(t, c.Kube, "before", "v", "1")
	label(t, c.Kube, "before", "v", "2")
	if err := c.Kube.CoreV1().Nodes().Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add before", "add after", "update before 1", "update before 2", "delete after"}
	kubetest.Eventually(t, time.Minute, "the node informer's events", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= len(want), fmt.Sprintf("seen %q", seen)
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Fatalf("node informer saw %q, want %q", seen, want)
	}
	// The informers streamed their initial state (WatchList) rather than falling back
	// to a list: the protocol is what client-go uses by default, so apisim must speak it.
	for _, r := range requests.all() {
		if strings.HasPrefix(r, "GET /api/v1/nodes ") && !strings.Contains(r, "watch=true") {
			t.Errorf("the node informer listed (%s): it fell back from WatchList", r)
		}
	}
	if n, err := nodes.Lister().Get("before"); err != nil || n.Labels["v"] != "2" {
		t.Fatalf("lister has %v, %v", n, err)
	}
}

// TestWatchList checks the protocol client-go's reflectors use by default
// (WatchListClient): the current objects as ADDED, then a bookmark carrying the
// initial-events-end annotation, then live events.
func TestWatchList(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	kubetest.CreateBareNode(t, c.Kube, "a", nil, nil)
	kubetest.CreateBareNode(t, c.Kube, "b", nil, nil)
	w, err := c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		m, _ := ev.Object.(metav1.Object)
		got = append(got, string(ev.Type)+" "+m.GetName())
		if ev.Type == watch.Bookmark {
			if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || m.GetResourceVersion() == "" {
				t.Fatalf("the bookmark ending the initial events: %+v", m)
			}
			break
		}
	}
	if want := []string{"ADDED a", "ADDED b", "BOOKMARK "}; !slices.Equal(got, want) {
		t.Fatalf("watch list sent %q, want %q", got, want)
	}
	label(t, c.Kube, "b", "x", "y")
	if ev := <-w.ResultChan(); ev.Type != watch.Modified || ev.Object.(*corev1.Node).Name != "b" {
		t.Fatalf("after the initial events: %v %v", ev.Type, ev.Object)
	}
	if _, err := c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without bookmarks: %v, want Invalid", err)
	}
}

func TestFieldSelectedInformer(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	kubetest.CreateBareNode(t, c.Kube, "mine", nil, nil)
	kubetest.CreateBareNode(t, c.Kube, "other", nil, nil)
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, 0, kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "mine").String()
	}))
	inf := kf.Core().V1().Nodes()
	var mu sync.Mutex
	var seen []string
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { mu.Lock(); seen = append(seen, "add "+o.(*corev1.Node).Name); mu.Unlock() },
		UpdateFunc: func(_, o any) { mu.Lock(); seen = append(seen, "update "+o.(*corev1.Node).Name); mu.Unlock() },
	}); err != nil {
		t.Fatal(err)
	}
	kf.Start(ctx.Done())
	t.Cleanup(kf.Shutdown)
	kf.WaitForCacheSync(ctx.Done())
	label(t, c.Kube, "other", "a", "1")
	label(t, c.Kube, "mine", "a", "1")
	kubetest.Eventually(t, time.Minute, "the update of mine", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2, fmt.Sprintf("seen %q", seen)
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"add mine", "update mine"}; !slices.Equal(seen, want) {
		t.Fatalf("a metadata.name=mine informer saw %q, want %q", seen, want)
	}
	if all, _ := inf.Lister().List(labels.Everything()); len(all) != 1 {
		t.Fatalf("its cache holds %d nodes, want 1", len(all))
	}
}

// TestSelectorTransitions: an object that starts or stops matching a watch's
// selectors is ADDED or DELETED for that watch, as kube-apiserver sends it.
func TestSelectorTransitions(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	createNamespace(t, c, "ns")
	pods := c.Kube.CoreV1().Pods("ns")
	w, err := c.Kube.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: "n2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ patch, want string }{
		{`{"spec":{"nodeName":"n1"}}`, "ADDED"},
		{`{"metadata":{"annotations":{"a":"b"}}}`, "MODIFIED"},
		{`{"metadata":{"labels":{"app":"db"}}}`, "DELETED"},
		{`{"metadata":{"labels":{"app":"web"}}}`, "ADDED"},
	}
	for _, s := range steps {
		if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(s.patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if ev := <-w.ResultChan(); string(ev.Type) != s.want {
			t.Fatalf("after %s: %s, want %s", s.patch, ev.Type, s.want)
		}
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Deleted {
		t.Fatalf("after the delete: %s", ev.Type)
	}
}

func TestWatchResume(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{WatchHistory: 8})
	n := kubetest.CreateBareNode(t, c.Kube, "n", nil, nil)
	label(t, c.Kube, "n", "v", "1")
	kubetest.CreateBareNode(t, c.Kube, "other", nil, nil)
	label(t, c.Kube, "n", "v", "2")

	w, err := c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: n.ResourceVersion, FieldSelector: "metadata.name=n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1", "2"} {
		ev := <-w.ResultChan()
		if ev.Type != watch.Modified || ev.Object.(*corev1.Node).Labels["v"] != want {
			t.Fatalf("resumed watch: %s %v, want MODIFIED with v=%s", ev.Type, ev.Object, want)
		}
	}
	w.Stop()

	// "0" is any version: the current objects as ADDED.
	w, err = c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"n", "other"} {
		if ev := <-w.ResultChan(); ev.Type != watch.Added || ev.Object.(*corev1.Node).Name != want {
			t.Fatalf("watch from 0: %s %v, want ADDED %s", ev.Type, ev.Object, want)
		}
	}
	w.Stop()

	for i := range 10 {
		label(t, c.Kube, "other", "i", fmt.Sprint(i))
	}
	w, err = c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: n.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from a resourceVersion older than the history: %s %v, want an ERROR 410 Gone", ev.Type, ev.Object)
	}
	// Without retries: the answer says to retry in a second, and client-go would.
	err = c.Kube.CoreV1().RESTClient().Get().Resource("nodes").Param("watch", "true").Param("resourceVersion", "999999").
		MaxRetries(0).Do(ctx).Error()
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("watch from a future resourceVersion: %v, want ResourceVersionTooLarge", err)
	}
}

// TestDroppedWatcherRecovers: a watcher the server drops (one that fell behind) ends
// its stream; the informer watches again from its last resourceVersion and misses
// nothing.
func TestDroppedWatcherRecovers(t *testing.T) {
	ctx := kubetest.Context(t)
	srv, c := start(t, Options{})
	kubetest.CreateBareNode(t, c.Kube, "n", nil, nil)
	kf := kubeinformers.NewSharedInformerFactory(c.Kube, 0)
	nodes := kf.Core().V1().Nodes()
	nodes.Informer()
	kf.Start(ctx.Done())
	t.Cleanup(kf.Shutdown)
	kf.WaitForCacheSync(ctx.Done())

	dropAll := func() int {
		s := srv.store
		s.mu.Lock()
		defer s.mu.Unlock()
		col := s.cols[corev1.SchemeGroupVersion.WithResource("nodes")]
		n := 0
		for w := range col.others {
			s.drop(w)
			n++
		}
		return n
	}
	kubetest.Eventually(t, time.Minute, "the informer's watch", func() (bool, string) { return dropAll() > 0, "no watch to drop" })
	label(t, c.Kube, "n", "v", "after-drop")
	kubetest.Eventually(t, time.Minute, "the informer to see the write made while it was not watching", func() (bool, string) {
		n, err := nodes.Lister().Get("n")
		if err != nil {
			return false, err.Error()
		}
		return n.Labels["v"] == "after-drop", fmt.Sprintf("label v=%q", n.Labels["v"])
	})
}

// TestSlowWatcherNeverBlocksWriters: writes go on while a watcher reads nothing; the
// watcher is dropped once its buffer is full.
func TestSlowWatcherNeverBlocksWriters(t *testing.T) {
	ctx := kubetest.Context(t)
	srv, c := start(t, Options{WatchBuffer: 2})
	s := srv.store
	col := s.cols[corev1.SchemeGroupVersion.WithResource("nodes")]
	w, _, err := s.watch(col, &filter{labels: labels.Everything()}, watchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		kubetest.CreateBareNode(t, c.Kube, fmt.Sprint("n", i), nil, nil)
	}
	s.mu.RLock()
	gone := w.gone
	s.mu.RUnlock()
	if !gone {
		t.Fatal("a watcher that read nothing of 5 events with a buffer of 2 was kept")
	}
	var got []watch.EventType
	for fr := range w.ch {
		got = append(got, fr.typ)
	}
	if len(got) != 2 {
		t.Fatalf("the dropped watcher had %d events queued, want its buffer's 2", len(got))
	}
	_ = ctx
}

// TestCloseLeavesNoGoroutines: after Close, nothing of the server runs, even with
// informers watching when it closed.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(kubetest.Context(t))
	defer cancel()
	srv, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := clientsFor(t, srv)
	kubetest.CreateBareNode(t, c.Kube, "n", nil, nil)
	kf := kubeinformers.NewSharedInformerFactory(c.Kube, 0)
	kf.Core().V1().Nodes().Informer()
	kf.Core().V1().Pods().Informer()
	kf.Start(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	if got := serverGoroutines(); len(got) == 0 {
		t.Fatal("no server goroutine found while it serves: the check below would prove nothing")
	}
	srv.Close()
	cancel()
	kf.Shutdown()
	var left []string
	kubetest.Eventually(t, time.Minute, "the server's goroutines to end", func() (bool, string) {
		left = serverGoroutines()
		return len(left) == 0, fmt.Sprintf("%d left", len(left))
	})
}

// serverGoroutines are the stacks of goroutines running the server's code or
// net/http's server side.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "apisim.(*Server)") || strings.Contains(g, "apisim.Start") ||
			strings.Contains(g, "net/http.(*conn).serve") || strings.Contains(g, "net/http.(*Server).Serve") {
			out = append(out, g)
		}
	}
	return out
}

// TestPeriodicBookmarks: a watch that takes bookmarks learns of writes it does not
// select, so that it can resume from a recent resourceVersion.
func TestPeriodicBookmarks(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{BookmarkInterval: 20 * time.Millisecond})
	kubetest.CreateBareNode(t, c.Kube, "quiet", nil, nil)
	w, err := c.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=quiet", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	busy := kubetest.CreateBareNode(t, c.Kube, "busy", nil, nil)
	for ev := range w.ResultChan() {
		if ev.Type != watch.Bookmark {
			t.Fatalf("a watch of quiet got %s %v", ev.Type, ev.Object)
		}
		rv, _ := strconv.ParseUint(ev.Object.(*corev1.Node).ResourceVersion, 10, 64)
		if want, _ := strconv.ParseUint(busy.ResourceVersion, 10, 64); rv >= want {
			return
		}
	}
	t.Fatal("the watch ended before a bookmark at or after the write to busy")
}

// requestLog is a slog.Handler keeping the server's request records as
// "METHOD PATH QUERY" lines.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *requestLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *requestLog) WithGroup(string) slog.Handler            { return l }
func (l *requestLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		return nil
	}
	var method, path, query string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method":
			method = a.Value.String()
		case "path":
			path = a.Value.String()
		case "query":
			query = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, method+" "+path+" "+query)
	return nil
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}
