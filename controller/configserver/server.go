// Package configserver serves each pool's rendered config to new machines at their
// first boot, as MCO's Machine Config Server does (GET /config/<pool>, Ignition in the
// spec version the Accept header asks for), with two differences: a request must carry
// the bootstrap token (firstboot.TokenHeader), or it gets 403, and a pool in the middle
// of a rollout hands out its target only once its rollout would hand it to a node
// (firstboot.Choose). It reads pools and MachineConfigs through informers, logs every
// request and counts them in Prometheus metrics. What it serves is decided in
// core/firstboot.
package configserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-semver/semver"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfginformers "github.com/openshift/client-go/machineconfiguration/informers/externalversions"
	mcfglisters "github.com/openshift/client-go/machineconfiguration/listers/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/platform/kube"
)

// Config is what a Server uses.
type Config struct {
	Clients *kube.Clients
	// Token is the bootstrap token every request must carry as "Bearer <token>" in
	// firstboot.TokenHeader.
	Token string
	// Registerer takes the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	Log        *slog.Logger
	Now        func() time.Time
}

// Server answers GET /config/<pool>.
type Server struct {
	cfg     Config
	pools   mcfglisters.MachineConfigPoolLister
	configs mcfglisters.MachineConfigLister
	synced  []cache.InformerSynced
	start   func(<-chan struct{})
	metrics *metrics
}

// New makes a Server; Start starts its informers.
func New(cfg Config) (*Server, error) {
	if cfg.Clients == nil {
		return nil, errors.New("config server: no clients")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("config server: the bootstrap token is missing or shorter than 16 characters")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := mcfginformers.NewSharedInformerFactory(cfg.Clients.MachineConfig, 0)
	pools := f.Machineconfiguration().V1().MachineConfigPools()
	configs := f.Machineconfiguration().V1().MachineConfigs()
	s := &Server{
		cfg:     cfg,
		pools:   pools.Lister(),
		configs: configs.Lister(),
		synced:  []cache.InformerSynced{pools.Informer().HasSynced, configs.Informer().HasSynced},
		start:   f.Start,
		metrics: newMetrics(cfg.Registerer),
	}
	return s, nil
}

// Start starts the informers and waits until their caches have synced, or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	s.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("config server: the caches of MachineConfigPools and MachineConfigs did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// Ready says whether the caches have synced, for /readyz.
func (s *Server) Ready() error {
	for _, ok := range s.synced {
		if !ok() {
			return errors.New("the caches of MachineConfigPools and MachineConfigs have not synced yet")
		}
	}
	return nil
}

// Handler is the server's HTTP handler: /config/<pool>, and 404 for anything else.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/config/", s.serveConfig)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	return mux
}

// serveConfig answers one request, logs it and counts it.
func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	begin := s.cfg.Now()
	pool := strings.TrimPrefix(r.URL.Path, "/config/")
	rec := &request{pool: pool, spec: ""}
	code, body := s.answer(r, rec)
	if code != http.StatusOK {
		http.Error(w, body, code)
	} else {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(rec.data)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(rec.data)
		}
	}
	// Only known pools are metric labels: a client naming random pools must not make
	// the metric grow without bound.
	label := rec.pool
	if !rec.known {
		label = ""
	}
	s.metrics.requests.WithLabelValues(label, strconv.Itoa(code), rec.spec).Inc()
	s.metrics.duration.WithLabelValues(strconv.Itoa(code)).Observe(s.cfg.Now().Sub(begin).Seconds())
	attrs := []any{"pool", pool, "code", code, "remote", r.RemoteAddr, "userAgent", r.UserAgent(), "accept", r.Header.Get("Accept")}
	if rec.spec != "" {
		attrs = append(attrs, "spec", rec.spec)
	}
	if rec.config != "" {
		attrs = append(attrs, "config", rec.config, "why", rec.why)
	}
	if code == http.StatusOK {
		s.cfg.Log.Info("served config", attrs...)
	} else {
		s.cfg.Log.Warn("refused config request", append(attrs, "reason", strings.TrimSpace(body))...)
	}
}

// request is what one request asked for and got, for its log line and metrics.
type request struct {
	pool, spec, config, why string
	known                   bool
	data                    []byte
}

// answer decides the reply to r: a status code, and the body of an error.
func (s *Server) answer(r *http.Request, rec *request) (int, string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return http.StatusMethodNotAllowed, "only GET and HEAD"
	}
	// The token first: a client without it learns nothing, not even which pools exist.
	if !s.authorized(r) {
		return http.StatusForbidden, fmt.Sprintf("forbidden: no valid bootstrap token in the %s header (\"Bearer <token>\"); the Ignition stub from `mcotui bootimages stub POOL` carries it", firstboot.TokenHeader)
	}
	if msgs := validation.IsDNS1123Subdomain(rec.pool); len(msgs) > 0 {
		return http.StatusNotFound, fmt.Sprintf("no pool %q: %s", rec.pool, strings.Join(msgs, "; "))
	}
	v, err := firstboot.SpecVersion(r.Header.Get("Accept"))
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	rec.spec = v.String()
	pool, err := s.pools.Get(rec.pool)
	if apierrors.IsNotFound(err) {
		return http.StatusNotFound, fmt.Sprintf("no MachineConfigPool %s", rec.pool)
	}
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("read MachineConfigPool %s: %v", rec.pool, err)
	}
	rec.known = true
	data, choice, err := s.render(pool, v)
	rec.config, rec.why = choice.Name, choice.Reason
	if err != nil {
		// Not the client's fault, and it may pass: Ignition retries a 5xx.
		return http.StatusServiceUnavailable, err.Error()
	}
	rec.data = data
	return http.StatusOK, ""
}

// render builds what pool hands a new machine, in spec v.
func (s *Server) render(pool *mcfgv1.MachineConfigPool, v semver.Version) ([]byte, firstboot.Choice, error) {
	choice := firstboot.Choose(pool, s.cfg.Now())
	if choice.Name == "" {
		return nil, choice, errors.New(choice.Reason + "; try again once the controller has rendered it")
	}
	mc, err := s.configs.Get(choice.Name)
	if err != nil {
		return nil, choice, fmt.Errorf("MachineConfigPool %s: read rendered MachineConfig %s: %w", pool.Name, choice.Name, err)
	}
	data, err := firstboot.Serve(mc, v)
	return data, choice, err
}

// authorized says whether r carries the bootstrap token, compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get(firstboot.TokenHeader), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Token)) == 1
}
