package model_test

import (
	"testing"
	"time"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// BenchmarkEstimate15000 is one pool estimate's recomputation (Store.Estimate once its
// TTL is past) on the worker pool of a 15,000-node cluster mid-burst.
func BenchmarkEstimate15000(b *testing.B) {
	const n = 15000
	s := model.NewStore()
	s.Apply(fixture.Large(n))
	s.Apply(fixture.Burst(n, 1))
	now := fixture.Now
	for b.Loop() {
		now = now.Add(time.Minute)
		for _, p := range s.Pools() {
			s.Estimate(p.Name, now)
		}
	}
}
