package celgate_test

import (
	"strings"
	"testing"

	"github.com/mcotui/mcotui/core/celgate"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"", "empty expression"},
		{"object.status.phase ==", "does not compile"},
		{"object.status.phase", ""}, // dyn: decided at evaluation
		{"1 + 2", "want bool"},
		{"'a'", "want bool"},
		{strings.Repeat("x", celgate.MaxExpressionLength+1), "more than"},
		{"nosuchvar.x == 1", "undeclared reference"},
	} {
		_, err := celgate.Compile(tc.expr)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Compile(%.40q) = %v, want it to compile", tc.expr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%.40q) = %v, want an error with %q", tc.expr, err, tc.want)
		}
	}
}

func TestEval(t *testing.T) {
	obj := map[string]any{"status": map[string]any{
		"health": "HEALTH_OK", "capacity": "10Gi",
		"items": []any{map[string]any{"ok": true}, map[string]any{"ok": false}},
	}}
	for _, tc := range []struct {
		expr    string
		want    bool
		wantErr string
	}{
		{"object.status.health == 'HEALTH_OK'", true, ""},
		{"object.status.health == 'HEALTH_WARN'", false, ""},
		{"quantity(object.status.capacity).isGreaterThan(quantity('1Gi'))", true, ""}, // Kubernetes' library
		{"object.status.items.all(i, i.ok)", false, ""},
		// One pass over ten thousand items is within the limit.
		{"object.status.many.all(i, i >= 0)", true, ""},
		{"has(object.status.missing) && object.status.missing", false, ""},
		{"object.status.missing == 'x'", false, "no such key"},
		{"object.status.health", false, "want bool"},
		// Cubic over a list of 60 (216,000 steps): stopped by the cost limit.
		{"object.status.big.all(a, object.status.big.all(b, object.status.big.all(c, a + b + c >= 0)))", false, "cost limit"},
	} {
		if strings.Contains(tc.expr, "many") {
			many := make([]any, 10000)
			for i := range many {
				many[i] = int64(i)
			}
			obj["status"].(map[string]any)["many"] = many
		}
		if strings.Contains(tc.expr, "big") {
			big := make([]any, 60)
			for i := range big {
				big[i] = int64(i)
			}
			obj["status"].(map[string]any)["big"] = big
		}
		p, err := celgate.Compile(tc.expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, err)
		}
		got, err := p.Eval(obj)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Eval(%q) = %v, %v; want an error with %q", tc.expr, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Eval(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
}
