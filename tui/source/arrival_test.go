package source

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

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
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(hold.wrap)
	c, err := New(ctx, cfg, Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Cleanup(hold.release) // before Close, which waits for the held reflector
	s := c.Subscribe()
	defer s.Close()

	want := map[string]bool{}
	for _, n := range append(p.AtNew, p.AtOld...) {
		want[n] = true
	}
	for _, e := range s.Snapshot() {
		if e.Kind == model.KindNode {
			delete(want, e.Node.Name)
		}
	}
	for len(want) > 0 {
		e := next(t, s, "the nodes of a list not yet ended", func(e model.Event) bool { return e.Kind == model.KindNode && want[e.Node.Name] })
		delete(want, e.Node.Name)
	}
	// The bookmark may come in a later read than the last node's event: wait for it.
	select {
	case <-hold.reached:
	case <-ctx.Done():
		t.Fatal("the nodes' watch never reached its closing bookmark: the source did not stream its list (WatchList), so this test held nothing")
	}
	if h := c.Health(); h.State != model.Connecting {
		t.Fatalf("health %v while the nodes' list is held, want connecting", h)
	}
	hold.release()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(); h.State != model.Connected {
		t.Errorf("health %v after the list ended, want connected", h)
	}
}

// bookmarkHold holds the response of the nodes' streaming list just before the bookmark
// that ends its initial events, until released. The bytes before it (every node's
// event, whole) go through; the decoder then waits for the rest of the bookmark.
type bookmarkHold struct {
	reached, released  chan struct{} // closed when the marker is met, and on release
	reachOnce, relOnce sync.Once
}

func newBookmarkHold() *bookmarkHold {
	return &bookmarkHold{reached: make(chan struct{}), released: make(chan struct{})}
}

func (h *bookmarkHold) release() { h.relOnce.Do(func() { close(h.released) }) }

func (h *bookmarkHold) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		q := r.URL.Query()
		if err != nil || r.URL.Path != "/api/v1/nodes" || q.Get("watch") != "true" || q.Get("sendInitialEvents") != "true" {
			return resp, err
		}
		resp.Body = &holdBody{ReadCloser: resp.Body, h: h}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// holdBody passes a body on until the marker of the initial events' end, then waits
// until released.
type holdBody struct {
	io.ReadCloser
	h       *bookmarkHold
	tail    []byte // the end of the last read, where a marker cut in two begins
	pending []byte // read but not yet passed on
	waiting bool   // the marker was met: pending waits for the release
	done    bool   // released: everything passes
}

var initialEventsEnd = []byte(metav1.InitialEventsAnnotationKey)

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
	j := bytes.Index(seen, initialEventsEnd)
	if j < 0 {
		b.tail = append([]byte(nil), seen[max(0, len(seen)-len(initialEventsEnd)+1):]...)
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
