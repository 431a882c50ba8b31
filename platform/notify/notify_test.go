package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// receiver is an in-process HTTP endpoint that records what it is sent, failing the
// first fail requests with 500.
type receiver struct {
	mu     sync.Mutex
	fail   int
	got    []request
	notify chan struct{}
}

type request struct {
	path, contentType string
	body              []byte
}

func newReceiver(t *testing.T, fail int) (*receiver, *httptest.Server) {
	r := &receiver{fail: fail, notify: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		failing := r.fail > 0
		if failing {
			r.fail--
		} else {
			r.got = append(r.got, request{req.URL.Path, req.Header.Get("Content-Type"), body})
		}
		r.mu.Unlock()
		if failing {
			http.Error(w, "try later", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
		r.notify <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) wait(t *testing.T, ctx context.Context, n int) []request {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]request(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.notify:
		case <-ctx.Done():
			t.Fatalf("received %d of %d notifications", len(got), n)
		}
	}
}

func TestWebhookAndSlackPayloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hook, hookSrv := newReceiver(t, 0)
	slack, slackSrv := newReceiver(t, 0)
	host := strings.TrimPrefix(slackSrv.URL, "http://")
	urls := []string{
		// A generic webhook with shoutrrr's JSON body.
		"generic://" + strings.TrimPrefix(hookSrv.URL, "http://") + "/hook?template=json&disabletls=yes",
		// The Slack incoming-webhook payload ({"text": ...}), as Mattermost and other
		// Slack-compatible endpoints take it.
		"mattermost://" + host + "/slacktoken?disabletls=yes",
	}
	reg := prometheus.NewRegistry()
	s, err := New(urls, Options{Template: `{{.Kind}} {{.Pool}}/{{.Node}}: {{.Message}}`, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s.Send(Event{Kind: NodeDrained, Pool: "worker", Node: "w-1", Config: "rendered-worker-2", Message: "3 pods evicted"})
	// The worker's step, here: the counts are read once it has delivered.
	s.deliver(ctx, <-s.queue)

	got := hook.wait(t, ctx, 1)
	var generic map[string]string
	if err := json.Unmarshal(got[0].body, &generic); err != nil {
		t.Fatalf("webhook body %q: %v", got[0].body, err)
	}
	if got[0].path != "/hook" || generic["message"] != "NodeDrained worker/w-1: 3 pods evicted" {
		t.Fatalf("webhook got %s %q", got[0].path, got[0].body)
	}
	sl := slack.wait(t, ctx, 1)
	var payload struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(sl[0].body, &payload); err != nil {
		t.Fatalf("slack body %q: %v", sl[0].body, err)
	}
	if sl[0].path != "/hooks/slacktoken" || payload.Text != "NodeDrained worker/w-1: 3 pods evicted" {
		t.Fatalf("slack-format got %s %q", sl[0].path, sl[0].body)
	}
	if n := s.Count(NodeDrained, "sent"); n != 2 {
		t.Fatalf("sent count %v, want 2", n)
	}
}

func TestFailedDeliveryIsRetriedThenCounted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, srv := newReceiver(t, 2) // two failures, then accepted
	u := "generic+" + srv.URL + "/hook"
	s, err := New([]string{u}, Options{Retries: 3, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go s.Run(ctx)
	s.Send(Event{Kind: NodeDone, Pool: "worker", Node: "w-1", Config: "rendered-worker-2"})
	got := r.wait(t, ctx, 1)
	if !strings.Contains(string(got[0].body), "NodeDone pool worker node w-1 (rendered-worker-2)") {
		t.Fatalf("body %q", got[0].body)
	}

	// An endpoint that never answers well: failed after its retries, and the
	// sender goes on with the next event.
	_, badSrv := newReceiver(t, 1<<30)
	s2, err := New([]string{"generic+" + badSrv.URL + "/x"}, Options{Retries: 1, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s2.deliver(ctx, Event{Kind: NodeDegraded, Pool: "p"}); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("delivery did not give up")
	}
	if n := s2.Count(NodeDegraded, "failed"); n != 1 {
		t.Fatalf("failed count %v", n)
	}
}

func TestBadURLAndTemplateNameTheProblem(t *testing.T) {
	if _, err := New([]string{"nosuchservice://x"}, Options{}); err == nil || !strings.Contains(err.Error(), "nosuchservice://x") {
		t.Fatalf("bad URL: %v", err)
	}
	if _, err := New(nil, Options{Template: "{{.Nodes}}"}); err == nil || !strings.Contains(err.Error(), ".Node") {
		t.Fatalf("bad template: %v", err)
	}
}

func TestSendNeverBlocks(t *testing.T) {
	s, err := New([]string{"generic+http://127.0.0.1:1/x"}, Options{Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	// No worker: the second event finds the queue full and is dropped at once.
	s.Send(Event{Kind: NodeDone})
	s.Send(Event{Kind: NodeDone})
	if n := s.Count(NodeDone, "dropped"); n != 1 {
		t.Fatalf("dropped %v", n)
	}
}
