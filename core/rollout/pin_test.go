package rollout_test

import (
	"testing"

	"github.com/mcotui/mcotui/core/rollout"
)

func TestRollbackPin(t *testing.T) {
	annotated := func(anns map[string]string) *poolT {
		p := pool()
		p.Annotations = anns
		return p
	}
	for _, tc := range []struct {
		name  string
		anns  map[string]string
		to    string
		stale bool
	}{
		{"none", nil, "", false},
		{"held", map[string]string{rollout.RollbackToAnnotation: oldCfg, rollout.RollbackFromAnnotation: newCfg}, oldCfg, false},
		{"sources changed", map[string]string{rollout.RollbackToAnnotation: oldCfg, rollout.RollbackFromAnnotation: "rendered-worker-older"}, "", true},
		{"half a pin", map[string]string{rollout.RollbackToAnnotation: oldCfg}, "", true},
	} {
		to, stale := rollout.RollbackPin(annotated(tc.anns), newCfg)
		if to != tc.to || stale != tc.stale {
			t.Errorf("%s: RollbackPin = %q, %t; want %q, %t", tc.name, to, stale, tc.to, tc.stale)
		}
	}
}
