package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

func TestGates(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	alerts, err := ParseMatchers(`severity="critical"`)
	if err != nil {
		t.Fatal(err)
	}
	pods := labels.SelectorFromSet(labels.Set{"app": "web"})
	g := Gates{Alerts: alerts, Pods: pods, Soak: 10 * time.Minute}
	cases := []struct {
		name   string
		e      Evidence
		reason string // substring; "" passes
		wait   time.Duration
	}{
		{"nothing updated, no alert", Evidence{Now: now}, "", 0},
		{"a critical alert fires", Evidence{Now: now, Alerts: []Alert{
			{Labels: map[string]string{"alertname": "HighLatency", "severity": "critical"}, State: "firing"},
			{Labels: map[string]string{"alertname": "DiskFilling", "severity": "warning"}, State: "firing"},
		}}, `alert HighLatency firing (gate {severity="critical"})`, 0},
		{"a pending alert does not hold", Evidence{Now: now, Alerts: []Alert{
			{Labels: map[string]string{"alertname": "HighLatency", "severity": "critical"}, State: "pending"},
		}}, "", 0},
		{"prometheus down", Evidence{Now: now, AlertsErr: errors.New("dial tcp 127.0.0.1:9090: connection refused")},
			"cannot evaluate the alert gate ({severity=\"critical\"}): dial tcp", 0},
		{"a node just updated, soaking", Evidence{Now: now, Updated: []UpdatedNode{
			{Name: "w1", UpdatedAt: ago(4 * time.Minute), ReadySince: ago(3 * time.Minute)},
		}}, "soaking: node w1 soaks until 12:07:00Z (Ready since 11:57:00Z, soak 10m0s)", 7 * time.Minute},
		{"a node just updated, not Ready", Evidence{Now: now, Updated: []UpdatedNode{{Name: "w1", UpdatedAt: ago(time.Minute)}}},
			"node w1, just updated, is not Ready", 0},
		{"a node soaked, its pod not Ready", Evidence{Now: now, Updated: []UpdatedNode{
			{Name: "w1", UpdatedAt: ago(20 * time.Minute), ReadySince: ago(20 * time.Minute), Pods: []Pod{{Namespace: "shop", Name: "web-1"}}},
		}}, "pod shop/web-1 on node w1, just updated, is not Ready (gate app=web)", 0},
		{"a pod Ready for less than the soak", Evidence{Now: now, Updated: []UpdatedNode{
			{Name: "w1", UpdatedAt: ago(20 * time.Minute), ReadySince: ago(20 * time.Minute), Pods: []Pod{{Namespace: "shop", Name: "web-1", ReadySince: ago(8 * time.Minute)}}},
		}}, "soaking: pod shop/web-1 on node w1 soaks until 12:02:00Z (Ready since 11:52:00Z, soak 10m0s)", 2 * time.Minute},
		{"all soaked", Evidence{Now: now, Updated: []UpdatedNode{
			{Name: "w1", UpdatedAt: ago(11 * time.Minute), ReadySince: ago(30 * time.Minute), Pods: []Pod{{Namespace: "shop", Name: "web-1", ReadySince: ago(10 * time.Minute)}}},
		}}, "", 0},
	}
	for _, c := range cases {
		reason, wait := g.Check(c.e)
		if (c.reason == "") != (reason == "") || !strings.Contains(reason, c.reason) || wait != c.wait {
			t.Errorf("%s: Check = %q, %s; want %q, %s", c.name, reason, wait, c.reason, c.wait)
		}
	}
	if !g.JustUpdated(now, ago(time.Minute), ago(time.Hour)) || g.JustUpdated(now, ago(time.Hour), ago(time.Hour)) || !g.JustUpdated(now, ago(time.Hour), time.Time{}) {
		t.Error("JustUpdated: a node updated a minute ago is, one updated an hour ago is not, one not Ready is")
	}
}
