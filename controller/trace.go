package controller

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// syncTrace times the phases of one driver.Sync, for a Debug line: a sync holds the
// pool's key, so its length is what a Done arriving meanwhile waits before the next
// sync can target the slot it freed. The line is written only at Debug.
type syncTrace struct {
	clock   clock.PassiveClock
	began   time.Time
	last    time.Time
	attrs   []any
	targets int
}

func (t *syncTrace) begin(clk clock.PassiveClock) {
	t.clock = clk
	t.began = clk.Now()
	t.last = t.began
}

// mark ends the phase named name.
func (t *syncTrace) mark(name string) {
	now := t.clock.Now()
	t.attrs = append(t.attrs, name, now.Sub(t.last))
	t.last = now
}

func (t *syncTrace) log(log *slog.Logger, pool string) {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := append([]any{"pool", pool, "targets", t.targets, "took", t.clock.Now().Sub(t.began)}, t.attrs...)
	log.Debug("synced pool", attrs...)
}
