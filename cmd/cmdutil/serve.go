package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// LogFormat is --log-format: text (slog's key=value lines) or json (one object a line,
// as Kubernetes components write with --logging-format=json).
type LogFormat string

// The formats LogFormat accepts.
const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// AddLogFormat adds --log-format to fl, default text.
func AddLogFormat(fl *pflag.FlagSet, f *LogFormat) {
	*f = LogText
	fl.Var(f, "log-format", "log format: text (key=value) or json (one JSON object a line)")
}

// String, Set and Type make a LogFormat a pflag.Value, so a wrong value is a usage error
// when the flags are parsed.
func (f *LogFormat) String() string { return string(*f) }

// Set accepts text or json.
func (f *LogFormat) Set(s string) error {
	switch LogFormat(s) {
	case LogText, LogJSON:
		*f = LogFormat(s)
		return nil
	}
	return fmt.Errorf("%q: use text or json", s)
}

// Type names the value in --help.
func (f *LogFormat) Type() string { return "text|json" }

// NewLogger is a logger writing to w in format f at level.
func NewLogger(w io.Writer, f LogFormat, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// KlogTo sends what client-go logs through klog to log, so that it comes in log's format
// (--log-format) rather than klog's own lines. klog's logger is the process's, which
// client-go forces; the returned function discards klog's output again, for a command
// run inside a test process.
func KlogTo(log *slog.Logger) (restore func()) {
	klog.SetLogger(logr.FromSlogHandler(log.Handler()))
	return func() { klog.SetLogger(logr.Discard()) }
}

// Serve serves h on addr until the returned stop function is called, and returns the
// address it listens on (addr may name port 0). flag names the flag addr came from, for
// the error when addr cannot be listened on.
func Serve(addr, flag string, h http.Handler, log *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, UsageErr(fmt.Errorf("--%s %s: %w", flag, addr, err))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "flag", flag, "err", err)
		}
	}()
	log.Info("serving", "flag", flag, "addr", ln.Addr().String())
	return ln.Addr().String(), func() {
		// A scrape or probe in flight gets a moment to finish; none holds the process.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// Probe is a health check: nil when healthy, else why not.
type Probe func() error

// HealthMux serves /healthz (live) and /readyz (ready) as Kubernetes components do:
// 200 "ok", or 503 with the reason. A nil probe is always healthy.
func HealthMux(mux *http.ServeMux, live, ready Probe) {
	handle := func(p Probe) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			if p != nil {
				if err := p(); err != nil {
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprintln(w, err)
					return
				}
			}
			fmt.Fprintln(w, "ok")
		}
	}
	mux.HandleFunc("/healthz", handle(live))
	mux.HandleFunc("/livez", handle(live))
	mux.HandleFunc("/readyz", handle(ready))
}

// NewRegistry is a metrics registry of the process's own, never client_golang's global
// one, with the Go runtime's and the process's collectors every component exports.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ServeOps serves reg's /metrics on metricsAddr and /healthz, /livez and /readyz (ready
// as the readiness probe) on healthAddr, each only when its address is given (the
// --metrics-addr and --health-addr flags). The returned function stops both.
func ServeOps(metricsAddr, healthAddr string, reg *prometheus.Registry, ready Probe, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		_, s, err := Serve(metricsAddr, "metrics-addr", mux, log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
	}
	if healthAddr != "" {
		mux := http.NewServeMux()
		HealthMux(mux, nil, ready)
		_, s, err := Serve(healthAddr, "health-addr", mux, log)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, s)
	}
	return stop, nil
}
