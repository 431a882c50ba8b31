package configserver

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's Prometheus metrics.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcotui_configserver_requests_total",
			Help: "Requests for a pool's first-boot config, by pool (empty for a pool that does not exist or a request refused before the pool was read), HTTP status code and Ignition spec version served.",
		}, []string{"pool", "code", "spec"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcotui_configserver_request_duration_seconds",
			Help:    "Time to answer a request for a first-boot config, by HTTP status code.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"code"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}
