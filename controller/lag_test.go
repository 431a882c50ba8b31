package controller_test

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/platform/kube"
)

// watchLag is how late the lagging controller's informers see every change.
const watchLag = time.Second

// TestRolloutRespectsMaxUnavailableOnALaggingCache rolls a pool out as
// TestRolloutRespectsMaxUnavailable does, with a controller whose informers see every
// change a second late (its watch responses are held back a second, byte by byte, by
// a wrapper of its transport): its own targets, its taints, the agent's reports. The
// controller plans from those caches, so only its record of its own writes keeps it
// from targeting more nodes than maxUnavailable; the recorder, which watches without
// lag, sees no more than 2 unavailable at any change, and the rollout completes.
func TestRolloutRespectsMaxUnavailableOnALaggingCache(t *testing.T) {
	pool := createPool(t, "lag", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-lag", "lag", "/etc/lag", "v1")
	old := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	nodes := createNodes(t, "lag", old, "zone-a", "zone-a", "zone-b", "zone-b", "")
	startFakeAgent(t, "lag", 300*time.Millisecond)
	rec := recordNodes(t, "lag")

	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return lagWatches{rt: rt, lag: watchLag} })
	lagging, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, "lease-lag", "lag-a", func(c *controller.Config) { c.Clients = lagging })
	waitRolledOut(t, "lag", old, nodes, 60*time.Second)

	v2 := machineConfig(t, "00-lag", "lag", "/etc/lag", "v2")
	target := expectedRendered(t, pool, v2)
	rec.expect(target)
	applyMC(t, v2)
	waitRolledOut(t, "lag", target, nodes, 2*time.Minute)

	maxSeen, at, order, events := rec.report()
	t.Logf("cache %s late: %d node changes; at most %d unavailable (%s); targeted in order %v", watchLag, events, maxSeen, at, order)
	if maxSeen > 2 {
		t.Errorf("%d nodes were unavailable at once (%s); maxUnavailable is 2", maxSeen, at)
	}
}

// lagWatches holds back the body of every watch response by lag: each chunk read from
// the server is handed on lag after it arrived, in order.
type lagWatches struct {
	rt  http.RoundTripper
	lag time.Duration
}

func (l lagWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err != nil || r.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	resp.Body = newLaggingBody(resp.Body, l.lag)
	return resp, nil
}

type chunk struct {
	data []byte
	at   time.Time
	err  error
}

// laggingBody reads its source on a goroutine of its own and gives out each chunk lag
// after it was read.
type laggingBody struct {
	src    io.ReadCloser
	lag    time.Duration
	chunks chan chunk
	cur    []byte
	once   sync.Once
}

func newLaggingBody(src io.ReadCloser, lag time.Duration) *laggingBody {
	b := &laggingBody{src: src, lag: lag, chunks: make(chan chunk, 1024)}
	go func() {
		defer close(b.chunks)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			b.chunks <- chunk{data: buf[:n], at: time.Now(), err: err}
			if err != nil {
				return
			}
		}
	}()
	return b
}

func (b *laggingBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		c, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		time.Sleep(time.Until(c.at.Add(b.lag)))
		if len(c.data) == 0 && c.err != nil {
			return 0, c.err
		}
		b.cur = c.data
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *laggingBody) Close() error {
	var err error
	b.once.Do(func() { err = b.src.Close() })
	return err
}
