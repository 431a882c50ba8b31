package prom_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/prom"
	"github.com/mcotui/mcotui/platform/prom/promtest"
)

const rules = `groups:
  - name: gate
    interval: 1s
    rules:
      - alert: GateTest
        expr: gate_test_value > 0
        labels:
          severity: critical
`

// The client reads a real Prometheus's alerts as they fire and resolve, the alert gate
// holds and releases on them, and the stand-in the rollout tests use answers in the
// same shape: the client reads the same alert from both.
func TestAlertsFromARealPrometheus(t *testing.T) {
	var value atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE gate_test_value gauge\ngate_test_value %d\n", value.Load())
	}))
	defer target.Close()
	server := promtest.StartReal(t, rules, strings.TrimPrefix(target.URL, "http://"))
	c, err := prom.New(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gates := policy.Gates{Alerts: mustMatchers(t, `severity="critical"`)}
	check := func() (string, []policy.Alert) {
		alerts, err := c.Alerts(ctx)
		reason, _ := gates.Check(policy.Evidence{Now: time.Now(), Alerts: alerts, AlertsErr: err})
		return reason, alerts
	}
	// Scraped and evaluated every second: a few evaluations at most, unless the machine
	// is starved, which the limit allows for.
	const limit = 2 * time.Minute

	if reason, alerts := check(); reason != "" || len(alerts) != 0 {
		t.Fatalf("before the alert: reason %q alerts %v", reason, alerts)
	}
	value.Store(1)
	var firing policy.Alert
	kubetest.Eventually(t, limit, "GateTest firing", func() (bool, string) {
		reason, alerts := check()
		if len(alerts) == 1 {
			firing = alerts[0]
		}
		return reason == `alert GateTest firing (gate {severity="critical"})`, fmt.Sprintf("%q %v", reason, alerts)
	})
	if firing.Labels["alertname"] != "GateTest" || firing.Labels["severity"] != "critical" || firing.State != "firing" || firing.ActiveAt.IsZero() {
		t.Errorf("the firing alert as read: %+v", firing)
	}

	// The stand-in, given the same alert, reads the same.
	stand := promtest.Start(t)
	stand.Set(promtest.Alert{Labels: firing.Labels, State: firing.State, ActiveAt: firing.ActiveAt})
	sc, err := prom.New(stand.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sc.Alerts(ctx)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Labels, firing.Labels) || got[0].State != firing.State || !got[0].ActiveAt.Equal(firing.ActiveAt) {
		t.Errorf("the stand-in's alert %+v (err %v), the real one's %+v", got, err, firing)
	}

	// Resolved: Prometheus drops it from the list and the gate passes.
	value.Store(0)
	kubetest.Eventually(t, limit, "GateTest resolved", func() (bool, string) {
		reason, alerts := check()
		return reason == "", fmt.Sprintf("%q %v", reason, alerts)
	})

	// Prometheus down: the gate holds and says why, from the real server and the
	// stand-in alike.
	server.Stop()
	stand.Down(true)
	for name, c := range map[string]*prom.Client{"real": c, "stand-in": sc} {
		alerts, err := c.Alerts(ctx)
		reason, _ := gates.Check(policy.Evidence{Now: time.Now(), Alerts: alerts, AlertsErr: err})
		if !strings.HasPrefix(reason, `cannot evaluate the alert gate ({severity="critical"}): read alerts from prometheus http://127.0.0.1:`) {
			t.Errorf("%s down: reason %q", name, reason)
		}
	}
}

func mustMatchers(t *testing.T, s string) []policy.Matcher {
	t.Helper()
	ms, err := policy.ParseMatchers(s)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
