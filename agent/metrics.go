package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcotui/mcotui/store"
)

// Metrics are the agent's Prometheus metrics, registered on a registry the caller owns
// (never the global default), so that tests and embedders see only their own.
type Metrics struct {
	phase    *prometheus.GaugeVec
	duration *prometheus.HistogramVec
	updates  *prometheus.CounterVec
	drift    prometheus.Gauge
}

// Phases the mcotui_agent_phase gauge knows, so that each has a series at 0 from the
// start and dashboards need no absent() tricks.
var metricPhases = []string{
	phaseIdle, phasePrepare, phaseCordon, phaseDrain, phaseSnapshot, phaseFiles, phaseUnits,
	phaseOS, phasePostActions, phaseReboot, phaseRebooted, phaseValidate, phaseBootCheck, phaseUncordon, phaseComplete, phaseRollback,
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcotui_agent_phase",
			Help: "1 for the update phase the agent is in (idle when there is no update), 0 for the others.",
		}, []string{"phase"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcotui_agent_phase_duration_seconds",
			Help:    "How long each update phase took.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600},
		}, []string{"phase"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcotui_agent_updates_total",
			Help: "Updates finished, by result: Done, Failed, Unreconcilable, Superseded.",
		}, []string{"result"}),
		drift: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcotui_agent_drift",
			Help: "1 while a managed file differs from the node's config, else 0.",
		}),
	}
	reg.MustRegister(m.phase, m.duration, m.updates, m.drift)
	m.setPhase(phaseIdle)
	for _, r := range []store.Result{store.ResultDone, store.ResultFailed, store.ResultUnreconcilable, store.ResultSuperseded} {
		m.updates.WithLabelValues(string(r)) // a series at 0, so rate() works from the first update
	}
	return m
}

func (m *Metrics) setPhase(name string) {
	if m == nil {
		return
	}
	for _, p := range metricPhases {
		v := 0.0
		if p == name {
			v = 1
		}
		m.phase.WithLabelValues(p).Set(v)
	}
}

func (m *Metrics) observe(phase string, d time.Duration) {
	if m != nil && phase != "" {
		m.duration.WithLabelValues(phase).Observe(d.Seconds())
	}
}

func (m *Metrics) finished(result string) {
	if m != nil {
		m.updates.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) setDrift(drifted bool) {
	if m == nil {
		return
	}
	if drifted {
		m.drift.Set(1)
	} else {
		m.drift.Set(0)
	}
}
