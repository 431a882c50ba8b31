package kubetest

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// LagWatches wraps rt so that the body of every watch response reaches its reader lag
// after it arrived from the server, chunk by chunk and in order: an informer built on it
// sees every change lag late, while its GETs, LISTs and writes are as fast as ever. That
// is the cache a controller must not trust more than its own writes.
func LagWatches(rt http.RoundTripper, lag time.Duration) http.RoundTripper {
	return lagWatches{rt: rt, lag: lag}
}

type lagWatches struct {
	rt  http.RoundTripper
	lag time.Duration
}

func (l lagWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err != nil || !isWatch(r) {
		return resp, err
	}
	resp.Body = newLaggingBody(resp.Body, l.lag)
	return resp, nil
}

// isWatch says whether r asks the API server for a watch stream: ?watch=true (what
// client-go sends, also for the streaming list of sendInitialEvents) or the deprecated
// /watch/ path prefix.
func isWatch(r *http.Request) bool {
	if w, err := strconv.ParseBool(r.URL.Query().Get("watch")); err == nil && w {
		return true
	}
	for _, prefix := range []string{"/api/", "/apis/"} {
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok {
			// /api/v1/watch/... or /apis/GROUP/VERSION/watch/...
			parts := strings.SplitN(rest, "/", 4)
			i := 1
			if prefix == "/apis/" {
				i = 2
			}
			return len(parts) > i && parts[i] == "watch"
		}
	}
	return false
}

// chunk is what one read of a watch body returned, and when.
type chunk struct {
	data []byte
	at   time.Time
	err  error
}

// laggingBody reads its source on a goroutine of its own, as fast as the server sends,
// and gives out each chunk lag after it was read. Reading ahead keeps the server's side
// of the stream (and HTTP/2 flow control) moving, so the lag stays lag and does not grow.
type laggingBody struct {
	src    io.ReadCloser
	lag    time.Duration
	chunks chan chunk
	done   chan struct{} // closed by Close: the reader stops, Read returns
	cur    []byte
	err    error // the source's error, given out once cur is read
	once   sync.Once
}

func newLaggingBody(src io.ReadCloser, lag time.Duration) *laggingBody {
	b := &laggingBody{src: src, lag: lag, chunks: make(chan chunk, 1024), done: make(chan struct{})}
	go func() {
		defer close(b.chunks)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			select {
			case b.chunks <- chunk{data: buf[:n], at: time.Now(), err: err}:
			case <-b.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return b
}

var errBodyClosed = errors.New("kubetest: read of a closed lagging watch body")

func (b *laggingBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var c chunk
		var ok bool
		select {
		case c, ok = <-b.chunks:
		case <-b.done:
			return 0, errBodyClosed
		}
		if !ok {
			return 0, io.EOF
		}
		if wait := time.Until(c.at.Add(b.lag)); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-b.done:
				timer.Stop()
				return 0, errBodyClosed
			}
		}
		b.cur, b.err = c.data, c.err
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *laggingBody) Close() error {
	var err error
	b.once.Do(func() {
		close(b.done)
		err = b.src.Close()
	})
	return err
}

// LaggingProxy is an HTTPS reverse proxy on loopback in front of the control plane's
// API server, for a process (a controller under test) whose informers must see every
// change late: it passes each request through with the caller's own bearer token, so
// the caller keeps its identity and RBAC, and holds back the bytes of watch responses
// by Lag, as LagWatches does. A client certificate ends at the proxy (TLS does), so
// callers authenticate with a token (see Env.ServiceAccountToken).
type LaggingProxy struct {
	// URL is where the proxy listens, https://127.0.0.1:PORT.
	URL string
	// CAData is the PEM certificate the proxy serves with, to trust it by.
	CAData []byte
	Lag    time.Duration

	srv     *httptest.Server
	watches atomic.Int64
	others  atomic.Int64
}

// StartLaggingProxy starts a LaggingProxy in front of this control plane, holding
// watches back by lag. Close stops it.
func (e *Env) StartLaggingProxy(lag time.Duration) (*LaggingProxy, error) {
	target, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("lagging proxy: the API server's address %q: %w", e.Config.Host, err)
	}
	// Trusts the API server and carries no credentials of its own: the caller's
	// Authorization header is what the API server sees.
	upstream, err := rest.TransportFor(rest.AnonymousClientConfig(e.Config))
	if err != nil {
		return nil, fmt.Errorf("lagging proxy: transport to %s: %w", e.Config.Host, err)
	}
	p := &LaggingProxy{Lag: lag}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: LagWatches(countingTransport{rt: upstream, p: p}, lag),
		// Watch responses stream: each event is flushed as soon as it is handed on.
		FlushInterval: -1,
	}
	p.srv = httptest.NewUnstartedServer(rp)
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	p.URL = p.srv.URL
	cert := p.srv.Certificate()
	p.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	return p, nil
}

// countingTransport counts what the proxy passed on, so a test can see that the watch
// requests it made went through the proxy and were held back.
type countingTransport struct {
	rt http.RoundTripper
	p  *LaggingProxy
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if isWatch(r) {
		c.p.watches.Add(1)
	} else {
		c.p.others.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// Requests returns how many watch requests, and how many others, the proxy has passed
// on.
func (p *LaggingProxy) Requests() (watches, others int64) {
	return p.watches.Load(), p.others.Load()
}

// Close stops the proxy and ends the connections through it.
func (p *LaggingProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Config returns a client configuration that reaches the API server through the proxy
// as the bearer of token.
func (p *LaggingProxy) Config(token string) *rest.Config {
	return &rest.Config{Host: p.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: p.CAData}}
}

// WriteKubeconfig writes a kubeconfig file at path for a process that should reach the
// API server through the proxy as the bearer of token.
func (p *LaggingProxy) WriteKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lagging"] = &clientcmdapi.Cluster{Server: p.URL, CertificateAuthorityData: p.CAData}
	cfg.AuthInfos["lagging"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["lagging"] = &clientcmdapi.Context{Cluster: "lagging", AuthInfo: "lagging"}
	cfg.CurrentContext = "lagging"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write the lagging proxy's kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// ServiceAccountToken returns a token of service account sa in namespace (created when
// missing) from the TokenRequest API, valid for an hour, bound to nothing: the
// credentials of a Deployment's pod as far as authentication and RBAC go.
func (e *Env) ServiceAccountToken(ctx context.Context, namespace, sa string) (string, error) {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}}
	if _, err := e.Kube.CoreV1().ServiceAccounts(namespace).Create(ctx, account, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("service account %s/%s: %w", namespace, sa, err)
	}
	tr, err := e.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token of service account %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// WriteTokenKubeconfig writes a kubeconfig file at path for a process that reaches the
// API server directly as the bearer of token (ServiceAccountToken's, say).
func (e *Env) WriteTokenKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "token"}
	cfg.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}
