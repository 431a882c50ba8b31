package policy

import (
	"strings"
	"testing"
)

func TestMatchers(t *testing.T) {
	ms, err := ParseMatchers(`{severity="critical", namespace=~"shop.*", alertname!="Watchdog", team!~"infra|sre"}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"severity": "critical", "namespace": "shop", "alertname": "HighLatency"}, true},
		{map[string]string{"severity": "critical", "namespace": "shop-eu", "alertname": "HighLatency", "team": "web"}, true},
		{map[string]string{"severity": "warning", "namespace": "shop"}, false},
		// Anchored, as in PromQL: "myshop" does not match shop.*.
		{map[string]string{"severity": "critical", "namespace": "myshop"}, false},
		{map[string]string{"severity": "critical", "namespace": "shop", "alertname": "Watchdog"}, false},
		{map[string]string{"severity": "critical", "namespace": "shop", "team": "sre"}, false},
	}
	for _, c := range cases {
		if got := MatchAll(ms, c.labels); got != c.want {
			t.Errorf("%v on %v = %t, want %t", ms, c.labels, got, c.want)
		}
	}
	if ms, err := ParseMatchers(`a="x\"y"`); err != nil || ms[0].Value != `x"y` {
		t.Errorf("escaped quote: %v %v", ms, err)
	}
}

func TestParseMatchersErrors(t *testing.T) {
	for in, want := range map[string]string{
		``:                      "no matcher",
		`{}`:                    "no matcher",
		`severity`:              "want name=",
		`1abc="x"`:              "not a label name",
		`a=x`:                   "double-quoted",
		`a='x'`:                 "double-quoted",
		`a="x" b="y"`:           "want a comma",
		`a=~"("`:                "bad regular expression",
		`a=""`:                  "gate on any alert",
		`a!="x"`:                "gate on any alert",
		`a="x", b=~"y", c===""`: "double-quoted",
	} {
		_, err := ParseMatchers(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMatchers(%q) = %v, want %q", in, err, want)
		}
	}
}

func FuzzParseMatchers(f *testing.F) {
	for _, s := range []string{`severity="critical"`, `{a=~"x.*", b!="y"}`, `a!~"b|c", d="\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMatchers(s)
		if err != nil {
			return
		}
		// What parsed prints back to matchers that parse to the same.
		var parts []string
		for _, m := range ms {
			parts = append(parts, m.String())
		}
		again, err := ParseMatchers(strings.Join(parts, ","))
		if err != nil || len(again) != len(ms) {
			t.Fatalf("%q printed as %q: %v", s, parts, err)
		}
		for i := range ms {
			if again[i].Name != ms[i].Name || again[i].Type != ms[i].Type || again[i].Value != ms[i].Value {
				t.Fatalf("%q: matcher %d %v printed and parsed as %v", s, i, ms[i], again[i])
			}
		}
	})
}
