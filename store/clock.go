package store

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mono is a reading of the node's monotonic clock, CLOCK_BOOTTIME (it counts time
// suspended and is never stepped, unlike the wall clock that NTP or an administrator
// may set back), with the boot it belongs to: the clock starts again at each boot, so
// two readings compare only within one. Durations are taken from Mono readings; wall
// times are kept for display.
type Mono struct {
	Boot  string `json:"boot"`
	Nanos int64  `json:"ns"`
}

// bootIDPath is the kernel's random id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// ReadMono reads the node's monotonic clock; nil when it cannot be read (the journal
// then measures with the wall clock, as before).
func ReadMono() *Mono {
	id, err := os.ReadFile(bootIDPath)
	if err != nil {
		return nil
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return nil
	}
	return &Mono{Boot: strings.TrimSpace(string(id)), Nanos: ts.Nano()}
}

// elapsed is the time from a start to an end, each a wall time and maybe a monotonic
// reading: the monotonic difference when both readings are of one boot, else the wall
// clock's, never less than zero (a wall clock set back between them says nothing of
// how long it was).
func elapsed(start, end time.Time, ms, me *Mono) time.Duration {
	if ms != nil && me != nil && ms.Boot != "" && ms.Boot == me.Boot && me.Nanos >= ms.Nanos {
		return time.Duration(me.Nanos - ms.Nanos)
	}
	return max(end.Sub(start), 0)
}

// Duration is how long the phase took, or has taken until (now, mono) if it is still
// open; mono is ReadMono's reading at now, nil for none.
func (p Phase) Duration(now time.Time, mono *Mono) time.Duration {
	if p.Finished.IsZero() {
		return elapsed(p.Started, now, p.StartedMono, mono)
	}
	return elapsed(p.Started, p.Finished, p.StartedMono, p.FinishedMono)
}

// Duration is how long the update took, or has taken until (now, mono) if it has not
// finished.
func (u Update) Duration(now time.Time, mono *Mono) time.Duration {
	if u.Finished.IsZero() {
		return elapsed(u.Started, now, u.StartedMono, mono)
	}
	return elapsed(u.Started, u.Finished, u.StartedMono, u.FinishedMono)
}

// Clock is the journal's clocks now: the wall time it stamps and its monotonic reading.
func (j *Journal) Clock() (time.Time, *Mono) {
	return j.now().UTC(), j.mono()
}
