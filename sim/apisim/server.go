package apisim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultWatchHistory = 10000
	DefaultWatchBuffer  = 256
	// DefaultBookmarkInterval is about kube-apiserver's.
	DefaultBookmarkInterval = time.Minute
	// maxBodyBytes bounds a request body, as kube-apiserver's 3 MiB object limit does.
	maxBodyBytes = 3 << 20
)

// Options configure a Server. The zero value serves on a free loopback port.
type Options struct {
	// Addr is the address to listen on. Default "127.0.0.1:0": a free loopback port.
	// There is no authentication: any other address lets anyone who reaches it write.
	Addr string
	// Clock gives creationTimestamp, managedFields times and the eviction time recorded
	// in a PodDisruptionBudget. Default: the real clock. Watch timeouts always use
	// real time: they bound connections, not simulated work.
	Clock clock.PassiveClock
	// WatchHistory is how many of the latest writes are kept for watches resuming
	// from a resourceVersion; older ones get 410 Gone and relist. Default
	// DefaultWatchHistory.
	WatchHistory int
	// WatchBuffer is how many events may wait for one watcher; a watcher that falls
	// further behind is dropped (its client watches again). Default DefaultWatchBuffer.
	WatchBuffer int
	// Logger receives the server's own trouble and, at debug level, one record per
	// request once it is answered (a watch when it ends). Default: discard.
	Logger *slog.Logger
	// BookmarkInterval is how often a watch that takes bookmarks gets one, so that a
	// client watching objects that rarely change still knows a recent
	// resourceVersion to resume from. Default DefaultBookmarkInterval.
	BookmarkInterval time.Duration
	// Namespaces are created at start besides those every cluster has (default,
	// kube-system, kube-public, kube-node-lease).
	Namespaces []string
}

// Server is a running in-memory API server.
type Server struct {
	store *store
	ln    net.Listener
	http  *http.Server
	cfg   *rest.Config
	log   *slog.Logger

	bookmarkEvery time.Duration

	mu       sync.Mutex // guards closed and the Add of handlers
	closed   bool
	handlers sync.WaitGroup
	served   chan struct{} // closed when http.Server.Serve returned
	done     chan struct{} // closed by Close
	once     sync.Once
}

// Start serves an empty cluster (only its namespaces) until ctx ends or Close is
// called.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.WatchHistory <= 0 {
		opts.WatchHistory = DefaultWatchHistory
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = DefaultWatchBuffer
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	s := &Server{bookmarkEvery: opts.BookmarkInterval, store: newStore(opts.Clock, opts.WatchHistory, opts.WatchBuffer), log: opts.Logger,
		served: make(chan struct{}), done: make(chan struct{})}
	nsCol := s.store.cols[corev1.SchemeGroupVersion.WithResource("namespaces")]
	for _, ns := range append([]string{"default", "kube-system", "kube-public", "kube-node-lease"}, opts.Namespaces...) {
		m := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
		if _, err := s.store.create(nsCol, "", m, writeMeta{manager: "apisim"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("apisim: create namespace %s: %w", ns, err)
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("apisim: listen on %s: %w", opts.Addr, err)
	}
	s.ln = ln
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug)}
	s.cfg = &rest.Config{
		Host:          "http://" + ln.Addr().String(),
		ContentConfig: rest.ContentConfig{ContentType: "application/json"},
		// Hundreds of simulated agents share one process: no client-side throttling.
		QPS: -1,
	}
	go func() {
		defer close(s.served)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("apisim stopped serving", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Config is a client configuration for the server: its URL, no credentials, JSON,
// and no client-side rate limit. It is a new copy on every call.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.cfg) }

// Close ends every watch, stops serving and waits until every request handler has
// returned. It may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.store.close()
		_ = s.http.Close()
		s.handlers.Wait()
		<-s.served
	})
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, apierrors.NewServiceUnavailable("the API server is shutting down"))
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		w = rec
		defer func() {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
				"code", rec.code, "userAgent", r.UserAgent())
		}()
	}

	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
		return
	}
	p, ok := parsePath(r.URL.Path)
	if !ok {
		writeError(w, notFound())
		return
	}
	if p.kind != pathObjects {
		if r.Method != http.MethodGet {
			writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(r.Method)))
			return
		}
		s.discovery(w, p)
		return
	}
	c, ok := s.store.collection(p.group, p.version, p.resource)
	if !ok || c.res.namespaced && p.namespace == "" && p.name != "" || !c.res.namespaced && p.namespace != "" {
		writeError(w, notFound())
		return
	}
	switch p.subresource {
	case "":
	case "status":
		if !c.res.status {
			writeError(w, notFound())
			return
		}
	case "eviction":
		if c.res.gvr != podsGVR {
			writeError(w, notFound())
			return
		}
		if r.Method != http.MethodPost {
			writeError(w, apierrors.NewMethodNotSupported(c.res.groupResource(), strings.ToLower(r.Method)))
			return
		}
	default:
		writeError(w, notFound())
		return
	}
	q := r.URL.Query()
	if q.Has("dryRun") {
		// Refused rather than ignored: ignoring it would store what the client meant
		// only to try.
		writeError(w, apierrors.NewBadRequest("apisim does not support dryRun"))
		return
	}
	wm := writeMeta{manager: q.Get("fieldManager"), subresource: p.subresource}
	if wm.manager == "" {
		wm.manager, _, _ = strings.Cut(r.UserAgent(), "/")
	}

	switch {
	case r.Method == http.MethodGet && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		s.serveWatch(w, r, c, p)
	case r.Method == http.MethodGet && p.name == "":
		f, err := newFilter(p.namespace, q.Get("labelSelector"), q.Get("fieldSelector"))
		if err != nil {
			writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		objs, rv := s.store.list(c, f)
		writeList(w, c.res, objs, rv)
	case r.Method == http.MethodGet:
		o, err := s.store.get(c, p.namespace, p.name)
		respond(w, http.StatusOK, o, err)
	case r.Method == http.MethodPost && p.subresource == "eviction":
		body, err := readBody(r, true)
		if err == nil {
			err = s.store.evict(p.namespace, p.name, body, wm)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeStatus(w, metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
	case r.Method == http.MethodPost && p.name == "":
		if c.res.namespaced && p.namespace == "" {
			writeError(w, notFound())
			return
		}
		m, err := decodeBody(r, c.res)
		var o *object
		if err == nil {
			o, err = s.store.create(c, p.namespace, m, wm)
		}
		respond(w, http.StatusCreated, o, err)
	case r.Method == http.MethodPut && p.name != "":
		m, err := decodeBody(r, c.res)
		var o *object
		if err == nil {
			o, err = s.store.update(c, p.namespace, p.name, m, wm)
		}
		respond(w, http.StatusOK, o, err)
	case r.Method == http.MethodPatch && p.name != "":
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		body, err := readBody(r, false)
		var o *object
		if err == nil {
			o, err = s.store.patch(c, p.namespace, p.name, ct, body, wm)
		}
		respond(w, http.StatusOK, o, err)
	case r.Method == http.MethodDelete && p.name != "" && p.subresource == "":
		pre, err := deletePreconditions(r)
		var o *object
		if err == nil {
			o, err = s.store.delete(c, p.namespace, p.name, pre)
		}
		respond(w, http.StatusOK, o, err)
	default:
		verb := strings.ToLower(r.Method)
		if r.Method == http.MethodDelete {
			verb = "deletecollection"
		}
		writeError(w, apierrors.NewMethodNotSupported(c.res.groupResource(), verb))
	}
}

func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
}

// readBody reads a request body that must be JSON (application/json, or no content
// type): apisim speaks no protobuf or CBOR.
func readBody(r *http.Request, mustBeJSON bool) ([]byte, error) {
	if mustBeJSON {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, _ := mime.ParseMediaType(ct)
			if mt != "application/json" && mt != "*/*" {
				return nil, unsupportedMediaType(fmt.Sprintf("the body's content type %q is not supported: apisim speaks application/json only", ct))
			}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read the request body: %v", err))
	}
	return body, nil
}

func decodeBody(r *http.Request, res *resource) (map[string]any, error) {
	body, err := readBody(r, true)
	if err != nil {
		return nil, err
	}
	return res.decode(body)
}

// deletePreconditions reads the DeleteOptions a DELETE may carry in its body.
func deletePreconditions(r *http.Request) (preconditions, error) {
	body, err := readBody(r, true)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return preconditions{}, err
	}
	var opts metav1.DeleteOptions
	if err := json.Unmarshal(body, &opts); err != nil {
		return preconditions{}, apierrors.NewBadRequest(fmt.Sprintf("the body of the request cannot be decoded as DeleteOptions: %v", err))
	}
	var pre preconditions
	if p := opts.Preconditions; p != nil {
		if p.UID != nil {
			pre.uid = string(*p.UID)
		}
		if p.ResourceVersion != nil {
			pre.resourceVersion = *p.ResourceVersion
		}
	}
	return pre, nil
}

func respond(w http.ResponseWriter, code int, o *object, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, code, o.raw)
}

func writeJSON(w http.ResponseWriter, code int, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(raw)
}

// writeError answers with the metav1.Status of err, so that client-go's apierrors
// predicates recognise it.
func writeError(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	writeStatus(w, status)
}

func writeStatus(w http.ResponseWriter, status metav1.Status) {
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	raw, _ := json.Marshal(status)
	writeJSON(w, int(status.Code), raw)
}

func writeList(w http.ResponseWriter, r *resource, objs []*object, rv uint64) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d"},"items":[`, r.apiVersion(), r.kind+"List", rv)
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o.raw)
	}
	b.WriteString("]}")
	writeJSON(w, http.StatusOK, b.Bytes())
}

// serveWatch streams watch events, one JSON object per line, until the client goes,
// the timeout the client asked for passes (a bookmark then says how far it got, when
// it takes bookmarks), or the server drops the watcher.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, c *collection, p apiPath) {
	q := r.URL.Query()
	fieldSelector := q.Get("fieldSelector")
	if p.name != "" { // the old GET .../NAME?watch=true form
		if fieldSelector != "" {
			fieldSelector += ","
		}
		fieldSelector += "metadata.name=" + p.name
	}
	f, err := newFilter(p.namespace, q.Get("labelSelector"), fieldSelector)
	if err != nil {
		writeError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	opts := watchOptions{
		resourceVersion:   q.Get("resourceVersion"),
		sendInitialEvents: q.Get("sendInitialEvents") == "true",
		bookmarks:         q.Get("allowWatchBookmarks") == "true",
	}
	timeout := 30 * time.Minute
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	wt, backlog, err := s.store.watch(c, f, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var buf bytes.Buffer
	send := func(fr frame) {
		buf.WriteString(`{"type":"`)
		buf.WriteString(string(fr.typ))
		buf.WriteString(`","object":`)
		buf.Write(fr.raw)
		buf.WriteString("}\n")
	}
	flush := func() bool {
		_, err := w.Write(buf.Bytes())
		buf.Reset()
		if err == nil {
			err = rc.Flush()
		}
		return err == nil
	}
	for _, fr := range backlog {
		send(fr)
	}
	if !flush() || wt == nil {
		if wt != nil {
			s.store.stopWatch(wt)
		}
		return
	}
	defer s.store.stopWatch(wt)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var bookmarks <-chan time.Time
	if opts.bookmarks {
		t := time.NewTicker(s.bookmarkEvery)
		defer t.Stop()
		bookmarks = t.C
	}
	for {
		select {
		case <-bookmarks:
			s.store.queueBookmark(wt)
		case fr, ok := <-wt.ch:
			if !ok {
				return
			}
			send(fr)
			for more := true; more; { // whatever else is waiting goes in the same flush
				select {
				case fr, ok := <-wt.ch:
					if !ok {
						flush()
						return
					}
					send(fr)
				default:
					more = false
				}
			}
			if !flush() {
				return
			}
		case <-timer.C:
			// Stop first, then send what was queued before the bookmark: a bookmark
			// past an event the client has not seen would make it skip that event.
			rv, complete := s.store.stopWatchAt(wt)
			for fr := range wt.ch {
				send(fr)
			}
			if opts.bookmarks && complete {
				send(frame{watch.Bookmark, bookmark(c.res, rv, false)})
			}
			flush()
			return
		case <-r.Context().Done():
			return
		}
	}
}

// statusRecorder remembers the status code of a response, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection to flush watch events.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
