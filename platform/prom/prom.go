// Package prom reads the alerts a rollout's alert gate checks from a Prometheus server,
// through Prometheus's HTTP API (/api/v1/alerts) and its Go client.
package prom

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/mcotui/mcotui/core/policy"
)

// Client reads alerts from one Prometheus server.
type Client struct {
	url string
	api promv1.API
	// timeout bounds one read, so a Prometheus that hangs holds the rollout with a
	// reason rather than the rollout loop.
	timeout time.Duration
}

// New returns a client of the Prometheus at url (http://prometheus.monitoring:9090).
// rt, when not nil, carries the requests (a bearer token, a CA).
func New(url string, rt http.RoundTripper) (*Client, error) {
	c, err := api.NewClient(api.Config{Address: url, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return &Client{url: url, api: promv1.NewAPI(c), timeout: 10 * time.Second}, nil
}

// Alerts are the server's alerts, firing and pending.
func (c *Client) Alerts(ctx context.Context) ([]policy.Alert, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read alerts from prometheus %s: %w", c.url, err)
	}
	out := make([]policy.Alert, len(res.Alerts))
	for i, a := range res.Alerts {
		labels := make(map[string]string, len(a.Labels))
		for k, v := range a.Labels {
			labels[string(k)] = string(v)
		}
		out[i] = policy.Alert{Labels: labels, State: string(a.State), ActiveAt: a.ActiveAt}
	}
	return out, nil
}
