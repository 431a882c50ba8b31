package source

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/model"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// newCluster starts a source on cfg and waits until it has listed everything.
func newCluster(t *testing.T, cfg *rest.Config, opts Options) *Cluster {
	t.Helper()
	ctx := kubetest.Context(t)
	c, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// next waits for the next event on s that matches, skipping others.
func next(t *testing.T, s *Subscription, what string, match func(model.Event) bool) model.Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, ok := <-s.Events():
			if !ok {
				t.Fatalf("%s: the subscription closed", what)
			}
			if match(e) {
				return e
			}
		case <-timeout:
			t.Fatalf("%s: no such event in 60s", what)
		}
	}
}

func poolNamed(name string) func(model.Event) bool {
	return func(e model.Event) bool { return e.Kind == model.KindPool && e.Pool.Name == name }
}

// TestSnapshotAndEvents: a subscription's snapshot holds what the informers listed,
// without managedFields or node images, and its channel carries each later change.
func TestSnapshotAndEvents(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tsnap", 2, 1)
	c := newCluster(t, env.Config, Options{Context: "test"})
	s := c.Subscribe()
	defer s.Close()

	kinds := map[model.Kind]int{}
	var health model.Health
	for _, e := range s.Snapshot() {
		kinds[e.Kind]++
		var meta metav1.Object
		switch e.Kind {
		case model.KindPool:
			meta = e.Pool
		case model.KindNode:
			meta = e.Node
			if len(e.Node.Status.Images) > 0 {
				t.Errorf("node %s keeps its images in the cache", e.Node.Name)
			}
		case model.KindMachineConfig:
			meta = e.MachineConfig
		case model.KindHealth:
			health = e.Health
		}
		if meta != nil && len(meta.GetManagedFields()) > 0 {
			t.Errorf("%s %s keeps its managedFields in the cache", e.Kind, meta.GetName())
		}
	}
	if kinds[model.KindPool] == 0 || kinds[model.KindNode] < 3 || kinds[model.KindMachineConfig] < 3 {
		t.Fatalf("snapshot by kind: %v", kinds)
	}
	if health.State != model.Connected {
		t.Errorf("health after sync: %v", health)
	}
	if info := s.Info(); info.Cluster != model.ClusterManaged || info.MCO || info.Context != "test" {
		t.Errorf("info %+v", info)
	}

	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, p.Name, types.MergePatchType,
		[]byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	next(t, s, "the pool paused", func(e model.Event) bool { return poolNamed(p.Name)(e) && e.Pool.Spec.Paused })

	if err := env.Kube.CoreV1().Nodes().Delete(ctx, p.AtOld[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next(t, s, "the node deleted", func(e model.Event) bool {
		return e.Kind == model.KindNode && e.Deleted && e.Node.Name == p.AtOld[0]
	})
}

// TestFanOut: many subscriptions share one set of informers; one that never reads
// neither blocks the others nor grows without bound, and once it reads it gets the
// latest state.
func TestFanOut(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tfan", 1, 0)
	c := newCluster(t, env.Config, Options{Buffer: 2})
	reader, stalled := c.Subscribe(), c.Subscribe()
	defer reader.Close()
	defer stalled.Close()
	if n := c.Subscribers(); n != 2 {
		t.Fatalf("%d subscribers", n)
	}

	const writes = 60
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	for i := 1; i <= writes; i++ {
		patch := fmt.Sprintf(`{"spec":{"maxUnavailable":%d}}`, i)
		if _, err := pools.Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	last := func(e model.Event) bool {
		return poolNamed(p.Name)(e) && e.Pool.Spec.MaxUnavailable != nil && e.Pool.Spec.MaxUnavailable.IntValue() == writes
	}
	next(t, reader, "the last write, on the reading subscription", last)

	// The stalled subscription holds one pending event per object at most: its
	// buffer, plus the coalesced set.
	stalled.mu.Lock()
	pending := len(stalled.pending)
	stalled.mu.Unlock()
	if pending > 1 {
		t.Errorf("%d events pending for one pool", pending)
	}
	got := 0
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-stalled.Events():
			if poolNamed(p.Name)(e) {
				got++
			}
			if last(e) {
				if got > 4 {
					t.Errorf("the stalled subscription got %d events of %d writes; they should have been folded", got, writes)
				}
				return
			}
		case <-deadline:
			t.Fatal("the stalled subscription never got the last write")
		}
	}
}

// TestClusterKind: a cluster without the Machine Config Operator is mcotui-managed;
// with MCO's daemon set it is OpenShift (MCO).
func TestClusterKind(t *testing.T) {
	c := newCluster(t, env.Config, Options{})
	if got := c.Info(); got.Cluster != model.ClusterManaged || got.MCO {
		t.Fatalf("without MCO: %+v", got)
	}
	kubetest.InstallFakeMCO(t, env.Kube)
	mco := newCluster(t, env.Config, Options{})
	if got := mco.Info(); got.Cluster != model.ClusterMCO || !got.MCO {
		t.Fatalf("with MCO's daemon set: %+v", got)
	}
}

// TestClose: closing the source closes every subscription's channel, so that each
// program says it is disconnected, and a subscription after that is closed at once.
func TestClose(t *testing.T) {
	c := newCluster(t, env.Config, Options{})
	s := c.Subscribe()
	c.Close()
	for range s.Events() {
	}
	late := c.Subscribe()
	if _, ok := <-late.Events(); ok {
		t.Fatal("a subscription to a closed source delivers events")
	}
	if c.Subscribers() != 0 {
		t.Fatalf("%d subscribers after Close", c.Subscribers())
	}
}

// TestReconnecting: when the API server cannot be reached the source says it is
// reconnecting and why, and says connected again once the watches are back.
func TestReconnecting(t *testing.T) {
	ctx := kubetest.Context(t)
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + px.addr
	if cfg.TLSClientConfig.ServerName == "" {
		cfg.TLSClientConfig.ServerName = u.Hostname()
	}
	c := newCluster(t, cfg, Options{ProbeInterval: 100 * time.Millisecond})
	s := c.Subscribe()
	defer s.Close()

	px.down()
	e := next(t, s, "reconnecting", func(e model.Event) bool { return e.Kind == model.KindHealth && e.Health.State == model.Degraded })
	if !strings.Contains(e.Health.Err, "API server") && !strings.Contains(e.Health.Err, "watch ") {
		t.Errorf("the error does not say what failed: %q", e.Health.Err)
	}
	if got := model.Degraded.String(); got != "reconnecting" {
		t.Errorf("Degraded reads %q", got)
	}
	px.up(t)
	next(t, s, "connected again", func(e model.Event) bool { return e.Kind == model.KindHealth && e.Health.State == model.Connected })

	// And the caches are current again: a change made after the outage arrives.
	p := clustertest.SeedPool(ctx, t, env, "trecon", 1, 0)
	next(t, s, "a pool created after the outage", poolNamed(p.Name))
}

// proxy forwards TCP to the API server and can be cut: down closes every connection
// and refuses new ones, as a network partition or an API server restart does.
type proxy struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), target: target}
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
