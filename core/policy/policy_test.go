package policy

import (
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func pool(anns map[string]string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Annotations: anns}}
}

func TestFromPool(t *testing.T) {
	p, err := FromPool(pool(nil))
	if err != nil || !p.Windows.Always() || p.Order != OrderDefault || p.Gates.Any() {
		t.Fatalf("no annotations: %+v %v; want no policy", p, err)
	}
	p, err = FromPool(pool(map[string]string{
		WindowsKey:    "Sat 22:00-Sun 04:00 Europe/Berlin",
		OrderKey:      "NewestFirst",
		AlertsGateKey: `severity="critical", namespace=~"shop.*"`,
		PodsGateKey:   "app=frontend",
		SoakKey:       "10m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Windows) != 1 || p.Order != OrderNewestFirst || len(p.Gates.Alerts) != 2 || p.Gates.Soak != 10*time.Minute ||
		!p.Gates.Pods.Matches(labels.Set{"app": "frontend"}) {
		t.Errorf("policy %+v", p)
	}
}

// Every bad annotation is named, in one error; none falls back to "no policy".
func TestFromPoolErrorsNameTheAnnotation(t *testing.T) {
	_, err := FromPool(pool(map[string]string{
		WindowsKey:    "Sat 22:00-Sun 04:00",
		OrderKey:      "Random",
		AlertsGateKey: `severity=critical`,
		PodsGateKey:   "app=frontend",
		SoakKey:       "ten minutes",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"pool worker annotation " + WindowsKey + `: window "Sat 22:00-Sun 04:00": unknown time zone`,
		"pool worker annotation " + OrderKey + `: "Random" is not OldestFirst or NewestFirst`,
		"pool worker annotation " + AlertsGateKey + ": label severity: the value must be a double-quoted string",
		"pool worker annotation " + SoakKey + `: "ten minutes" is not a duration`,
		"pool worker annotation " + PodsGateKey + ": needs " + SoakKey,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	for anns, want := range map[[2]string]string{
		{PodsGateKey, ""}:          "empty selector",
		{PodsGateKey, "app in ("}:  "not a label selector",
		{SoakKey, "-5m"}:           "negative",
		{AlertsGateKey, `a=~".*"`}: "gate on any alert",
	} {
		_, err := FromPool(pool(map[string]string{anns[0]: anns[1], SoakKey: "1m"}))
		if anns[0] == SoakKey {
			_, err = FromPool(pool(map[string]string{anns[0]: anns[1]}))
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%q: %v, want %q", anns[0], anns[1], err, want)
		}
	}
}

func node(anns map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: anns}}
}

func TestHoldAndPriority(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "True": true, "false": false, " true ": true} {
		if held, err := Held(node(map[string]string{HoldKey: v})); err != nil || held != want {
			t.Errorf("hold %q: %t %v", v, held, err)
		}
	}
	if held, err := Held(node(nil)); held || err != nil {
		t.Errorf("no annotation: held %t %v", held, err)
	}
	// A typo holds the node and says so.
	if held, err := Held(node(map[string]string{HoldKey: "yes please"})); !held || err == nil || !strings.Contains(err.Error(), "node n1 annotation "+HoldKey) {
		t.Errorf("typo: held %t err %v; want held with an error naming the node", held, err)
	}
	if p, err := Priority(node(map[string]string{PriorityKey: "-3"})); p != -3 || err != nil {
		t.Errorf("priority -3: %d %v", p, err)
	}
	if _, err := Priority(node(map[string]string{PriorityKey: "high"})); err == nil {
		t.Error("priority high: no error")
	}
}

func TestSummary(t *testing.T) {
	p := mustPolicyT(t, map[string]string{
		WindowsKey: "Sat 22:00-Sun 04:00 Europe/Berlin", OrderKey: "OldestFirst",
		AlertsGateKey: `severity="critical"`, PodsGateKey: "app=web", SoakKey: "10m",
	})
	now := time.Date(2026, 12, 5, 17, 48, 0, 0, time.UTC)
	want := `windows Sat 22:00-Sun 04:00 Europe/Berlin (next window in 3h12m (Sat 22:00 CET)); gates: alerts {severity="critical"}, pods app=web Ready, soak 10m0s; order OldestFirst`
	if got := p.Summary(now); got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
	if got := (Policy{}).Summary(now); got != "" {
		t.Errorf("no policy: %q", got)
	}
}

func mustPolicyT(t *testing.T, anns map[string]string) Policy {
	t.Helper()
	p, err := FromPool(pool(anns))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
