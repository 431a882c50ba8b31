package render

import (
	"testing"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"
)

// TestCacheRendersAsRender: a Cache shared by many renders gives exactly Render's
// result every time, errors included, so the configs it shares between renders are
// never changed by a merge: each draw renders a pool through the same cache twice, and
// a sequence of draws meets the same sources again.
func TestCacheRendersAsRender(t *testing.T) {
	c := NewCache()
	pool := newPool("infra", roleSelector("worker", "infra"))
	rapid.Check(t, func(t *rapid.T) {
		mcs := genMCs().Draw(t, "mcs")
		want, wantErr := Render(pool, mcs)
		for i := range 2 {
			got, err := c.Render(pool, mcs)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("render %d through the cache: error %v, want %v", i, err, wantErr)
			}
			if err != nil {
				continue
			}
			g, _ := yaml.Marshal(got)
			w, _ := yaml.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("render %d through the cache:\n%s\nwant\n%s", i, g, w)
			}
		}
	})
}
