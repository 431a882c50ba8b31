package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestRowsArriveBeforeTheListEnds: the nodes of the initial list reach a subscription
// while the list is still being read. The nodes' watch stream (WatchList: the initial
// list as events, ended by a bookmark) is held just before its closing bookmark, so that
// the informer cannot sync; every node must still be delivered, the health still
// connecting. Once the stream goes on, the source syncs and says connected.
func TestRowsArriveBeforeTheListEnds(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tarrive", 3, 2)
	hold := newBookmarkHold()
	c, s := subscribeHeld(ctx, t, hold)

	want := map[string]bool{}
	for _, n := range append(p.AtNew, p.AtOld...) {
		want[n] = true
	}
	receiveWhileHeld(ctx, t, c, s, hold, "the nodes", model.KindNode, want,
		"the nodes' watch never reached its closing bookmark: the source did not stream its list (WatchList), so this test held nothing")
	hold.release()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(); h.State != model.Connected {
		t.Errorf("health %v after the list ended, want connected", h)
	}
}

// TestMachineConfigNodesArriveBeforeTheListEnds: the MachineConfigNodes of the
// initial list reach a subscription as their list is decoded. The list's body is held
// just after its last item, so that the informer cannot sync; every MachineConfigNode
// must still be delivered, the health still connecting. Once the list goes on, the
// source syncs and says connected, and it delivers none of them a second time: the
// informer's own Adds of a listed object repeat what arrived (5,000 events to apply for
// nothing on 5,000 nodes, before the program may say connected).
func TestMachineConfigNodesArriveBeforeTheListEnds(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tmcnarrive", 3, 0)
	want := map[string]bool{}
	for _, name := range p.AtNew {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, kube.NewMachineConfigNode(node, p.Name, p.New), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	ours := maps.Clone(want)
	// The server's JSON has a list's keys in order: items, then kind.
	hold := newBodyHold([]byte(`],"kind":"MachineConfigNodeList"`), func(r *http.Request) bool {
		return r.URL.Path == "/apis/machineconfiguration.openshift.io/v1/machineconfignodes" && r.URL.Query().Get("watch") != "true"
	})
	c, s := subscribeHeld(ctx, t, hold)
	receiveWhileHeld(ctx, t, c, s, hold, "the MachineConfigNodes", model.KindMCN, want,
		"the MachineConfigNodes' list never reached its end: nothing was held, so this test proves nothing")
	hold.release()
	for {
		e := next(t, s, "connected, once the list ended", func(e model.Event) bool {
			return e.Kind == model.KindHealth || (e.Kind == model.KindMCN && ours[e.MCN.Name])
		})
		if e.Kind == model.KindMCN {
			t.Errorf("MachineConfigNode %s was delivered again when its list ended; it had not changed", e.MCN.Name)
			continue
		}
		if e.Health.State == model.Connected {
			break
		}
	}
}

// subscribeHeld starts a source whose responses go through hold, and subscribes to it.
func subscribeHeld(ctx context.Context, t *testing.T, hold *bodyHold) (*Cluster, *Subscription) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(hold.wrap)
	c, err := New(ctx, cfg, Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Cleanup(hold.release) // before Close, which waits for the held reflector
	s := c.Subscribe()
	t.Cleanup(s.Close)
	return c, s
}

// receiveWhileHeld takes from s, its snapshot then its events, every object of want
// (of kind), and then checks that hold has met its marker (notHeld says what it means
// if it never does) and that the source, its list held, still says connecting.
func receiveWhileHeld(ctx context.Context, t *testing.T, c *Cluster, s *Subscription, hold *bodyHold, what string, kind model.Kind, want map[string]bool, notHeld string) {
	t.Helper()
	for _, e := range s.Snapshot() {
		if e.Kind == kind {
			delete(want, e.Name())
		}
	}
	for len(want) > 0 {
		e := next(t, s, what+" of a list not yet ended", func(e model.Event) bool { return e.Kind == kind && want[e.Name()] })
		delete(want, e.Name())
	}
	// The marker may come in a later read than the last object: wait for it.
	select {
	case <-hold.reached:
	case <-ctx.Done():
		t.Fatal(notHeld)
	}
	if h := c.Health(); h.State != model.Connecting {
		t.Fatalf("health %v while the list of %s is held, want connecting", h, what)
	}
}

// bodyHold holds the response to the requests match picks just before the first
// marker in its body, until released. The bytes before it (every object before the
// marker, whole) go through; the decoder then waits for the rest.
type bodyHold struct {
	match              func(*http.Request) bool
	marker             []byte
	reached, released  chan struct{} // closed when the marker is met, and on release
	reachOnce, relOnce sync.Once
}

// newBookmarkHold holds the nodes' streaming list (WatchList) before the bookmark that
// ends its initial events.
func newBookmarkHold() *bodyHold {
	return newBodyHold([]byte(metav1.InitialEventsAnnotationKey), func(r *http.Request) bool {
		q := r.URL.Query()
		return r.URL.Path == "/api/v1/nodes" && q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true"
	})
}

func newBodyHold(marker []byte, match func(*http.Request) bool) *bodyHold {
	return &bodyHold{match: match, marker: marker, reached: make(chan struct{}), released: make(chan struct{})}
}

func (h *bodyHold) release() { h.relOnce.Do(func() { close(h.released) }) }

func (h *bodyHold) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil || !h.match(r) {
			return resp, err
		}
		resp.Body = &holdBody{ReadCloser: resp.Body, h: h}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// holdBody passes a body on until its hold's marker, then waits until released.
type holdBody struct {
	io.ReadCloser
	h       *bodyHold
	tail    []byte // the end of the last read, where a marker cut in two begins
	pending []byte // read but not yet passed on
	waiting bool   // the marker was met: pending waits for the release
	done    bool   // released: everything passes
}

func (b *holdBody) Read(p []byte) (int, error) {
	if b.waiting {
		<-b.h.released
		b.waiting, b.done = false, true
	}
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	}
	n, err := b.ReadCloser.Read(p)
	if b.done || n == 0 {
		return n, err
	}
	seen := append(b.tail, p[:n]...)
	j := bytes.Index(seen, b.h.marker)
	if j < 0 {
		b.tail = append([]byte(nil), seen[max(0, len(seen)-len(b.h.marker)+1):]...)
		return n, err
	}
	// What precedes the marker goes on (a bookmark frame cut short only makes the
	// decoder wait for the rest); the rest waits.
	cut := max(0, j-len(b.tail))
	b.pending = append([]byte(nil), p[cut:n]...)
	b.waiting = true
	b.h.reachOnce.Do(func() { close(b.h.reached) })
	if cut > 0 {
		return cut, nil
	}
	return b.Read(p)
}

// TestMachineConfigNodesAreListed: the MachineConfigNodes' informer reads its initial
// list as one list request (listOnly), never as a watch's initial events, and its
// objects come without managedFields (kube.ListMachineConfigNodes), while the nodes'
// informer still streams its list (WatchList) for rows to show as they arrive.
func TestMachineConfigNodesAreListed(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tlisted", 2, 1)
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, p.AtNew[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, kube.NewMachineConfigNode(node, p.Name, p.New), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if p := r.URL.Path; p == "/api/v1/nodes" || p == "/apis/machineconfiguration.openshift.io/v1/machineconfignodes" {
				q := r.URL.Query()
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s watch=%s sendInitialEvents=%s", p, q.Get("watch"), q.Get("sendInitialEvents")))
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	c, err := New(ctx, cfg, Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	requests := slices.Clone(seen)
	mu.Unlock()
	const (
		mcnList       = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes watch= sendInitialEvents="
		mcnStream     = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes watch=true sendInitialEvents=true"
		nodesStreamed = "/api/v1/nodes watch=true sendInitialEvents=true"
	)
	if !slices.Contains(requests, mcnList) || slices.Contains(requests, mcnStream) || !slices.Contains(requests, nodesStreamed) {
		t.Errorf("requests before the source synced:\n%s\nwant the MachineConfigNodes listed (%q, never %q) and the nodes streamed (%q)",
			strings.Join(requests, "\n"), mcnList, mcnStream, nodesStreamed)
	}
	s := c.Subscribe()
	defer s.Close()
	mcns := 0
	for _, e := range s.Snapshot() {
		if e.Kind == model.KindMCN && e.MCN.Name == node.Name {
			mcns++
			if len(e.MCN.ManagedFields) != 0 {
				t.Errorf("MachineConfigNode %s holds managedFields", e.MCN.Name)
			}
		}
	}
	if mcns != 1 {
		t.Errorf("MachineConfigNode %s is %d times in the snapshot after the source synced; want once", node.Name, mcns)
	}
}
