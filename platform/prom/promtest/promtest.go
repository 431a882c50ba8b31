// Package promtest serves Prometheus's /api/v1/alerts on 127.0.0.1 with alerts a test
// sets, in the shape the real server writes (platform/prom's tests check it against a
// real Prometheus), for rollout tests that need alerts to fire and resolve on cue.
package promtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Alert is one alert the server reports.
type Alert struct {
	Labels   map[string]string
	State    string // firing or pending
	ActiveAt time.Time
}

// Server is the stand-in.
type Server struct {
	URL string

	mu     sync.Mutex
	alerts []Alert
	down   bool
	reads  int
}

// Start serves until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Set replaces the alerts.
func (s *Server) Set(alerts ...Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alerts = alerts
}

// Down makes the server answer 503, as a Prometheus that is restarting.
func (s *Server) Down(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Reads is how many times the alerts were read.
func (s *Server) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

type alertJSON struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if r.URL.Path != "/api/v1/alerts" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "unavailable", "error": "Service Unavailable"})
		return
	}
	alerts := make([]alertJSON, len(s.alerts))
	for i, a := range s.alerts {
		alerts[i] = alertJSON{Labels: a.Labels, Annotations: map[string]string{}, State: a.State, ActiveAt: a.ActiveAt, Value: "1e+00"}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"alerts": alerts}})
}
