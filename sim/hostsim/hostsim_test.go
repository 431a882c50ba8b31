package hostsim

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcotui/mcotui/platform/host"
)

// sleeps records the waits a host asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func newHost(t *testing.T, s *sleeps, seed uint64) (*Host, string) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/lib/systemd/system/chronyd.service"), []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{
		Dir: root, BootIDFile: filepath.Join(dir, "boot_id"), Seed: seed, Sleep: s.sleep,
		Restart: Delay{200 * time.Millisecond, 800 * time.Millisecond},
		Reboot:  Delay{5 * time.Second, 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

func TestRestartWaitsAJitteredDelayWithinBounds(t *testing.T) {
	s := &sleeps{}
	h, _ := newHost(t, s, 1)
	for range 20 {
		if err := h.Restart(t.Context(), "chronyd.service"); err != nil {
			t.Fatal(err)
		}
	}
	distinct := map[time.Duration]bool{}
	for _, d := range s.ds {
		if d < 200*time.Millisecond || d > 800*time.Millisecond {
			t.Fatalf("restart waited %v, outside [200ms, 800ms]", d)
		}
		distinct[d] = true
	}
	if len(s.ds) != 20 || len(distinct) < 10 {
		t.Fatalf("waits %v: want 20 jittered ones", s.ds)
	}
}

func TestSameSeedSameDelays(t *testing.T) {
	var a, b sleeps
	ha, _ := newHost(t, &a, 7)
	hb, _ := newHost(t, &b, 7)
	for range 5 {
		_ = ha.Restart(t.Context(), "chronyd.service")
		_ = hb.Restart(t.Context(), "chronyd.service")
	}
	if !slices.Equal(a.ds, b.ds) {
		t.Fatalf("seed 7 gave %v then %v", a.ds, b.ds)
	}
}

func TestBrokenUnitFailsUntilRepaired(t *testing.T) {
	h, _ := newHost(t, &sleeps{}, 1)
	h.Break("chronyd.service", "chronyd: cannot bind to port 123")
	err := h.Restart(t.Context(), "chronyd.service")
	var je *host.JobError
	if !errors.As(err, &je) || je.Result != "failed" || !strings.Contains(err.Error(), "cannot bind to port 123") {
		t.Fatalf("restart of a broken unit: %v", err)
	}
	h.Repair("chronyd.service")
	if err := h.Restart(t.Context(), "chronyd.service"); err != nil {
		t.Fatalf("restart after repair: %v", err)
	}
	want := []string{"restart chronyd.service -> failed", "restart chronyd.service"}
	if got := h.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

func TestUnitsNeedUnitFiles(t *testing.T) {
	h, root := newHost(t, &sleeps{}, 1)
	ctx := t.Context()
	for name, err := range map[string]error{
		"restart":         h.Restart(ctx, "missing.service"),
		"enable":          h.Enable(ctx, "missing.service"),
		"disable":         h.Disable(ctx, "missing.service"),
		"unit file state": func() error { _, err := h.UnitFileState(ctx, "missing.service"); return err }(),
	} {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s of a unit with no file: %v, want fs.ErrNotExist", name, err)
		}
	}
	// A unit file written under /etc (as the agent writes a config's units) counts.
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/new.service"), []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Enable(ctx, "new.service"); err != nil {
		t.Fatal(err)
	}
	if st, err := h.UnitFileState(ctx, "new.service"); err != nil || st != "enabled" {
		t.Fatalf("state %q, %v", st, err)
	}
}

func TestEnablementAndMasks(t *testing.T) {
	h, _ := newHost(t, &sleeps{}, 1)
	ctx := t.Context()
	state := func() string {
		t.Helper()
		st, err := h.UnitFileState(ctx, "chronyd.service")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := state(); st != "disabled" {
		t.Fatalf("new host: %s", st)
	}
	if err := h.Enable(ctx, "chronyd.service"); err != nil || state() != "enabled" {
		t.Fatalf("enable: %v, %s", err, state())
	}
	if err := h.Mask(ctx, "chronyd.service"); err != nil || state() != "masked" {
		t.Fatalf("mask: %v, %s", err, state())
	}
	if err := h.Restart(ctx, "chronyd.service"); err == nil {
		t.Fatal("a masked unit restarted")
	}
	if err := h.Enable(ctx, "chronyd.service"); err == nil {
		t.Fatal("a masked unit was enabled")
	}
	if err := h.Unmask(ctx, "chronyd.service"); err != nil || state() != "enabled" {
		t.Fatalf("unmask: %v, %s", err, state())
	}
	if err := h.Disable(ctx, "chronyd.service"); err != nil || state() != "disabled" {
		t.Fatalf("disable: %v, %s", err, state())
	}
}

func TestRebootThenBootChangesTheBootID(t *testing.T) {
	s := &sleeps{}
	h, _ := newHost(t, s, 3)
	first, err := host.BootID(h.opts.BootIDFile)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Rebooted():
		t.Fatal("rebooted before any reboot was asked for")
	default:
	}
	if err := h.Reboot(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Rebooted():
	default:
		t.Fatal("Rebooted did not say a reboot was asked for")
	}
	if err := h.Boot(t.Context()); err != nil {
		t.Fatal(err)
	}
	second, err := host.BootID(h.opts.BootIDFile)
	if err != nil {
		t.Fatal(err)
	}
	if second == first || h.Boots() != 2 {
		t.Fatalf("boot ids %q then %q, boots %d", first, second, h.Boots())
	}
	if len(s.ds) != 1 || s.ds[0] < 5*time.Second || s.ds[0] > 10*time.Second {
		t.Fatalf("the reboot waited %v, want one wait in [5s, 10s]", s.ds)
	}
}

func TestCancelledWaitFails(t *testing.T) {
	h, _ := newHost(t, &sleeps{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := h.Restart(ctx, "chronyd.service"); !errors.Is(err, context.Canceled) {
		t.Fatalf("restart with an ended context: %v", err)
	}
	if err := h.Boot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("boot with an ended context: %v", err)
	}
}

// A boot that loses the staged deployment comes up on the one booted before; the next
// boot after it boots what was staged again.
func TestLoseStagedBootsThePreviousDeployment(t *testing.T) {
	h, _ := newHost(t, &sleeps{}, 4)
	ctx := t.Context()
	image := func() string {
		b, _, err := h.Deployments(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b.Image
	}
	h.LoseStaged(1)
	if err := h.Rebase(ctx, "quay.io/os:2"); err != nil {
		t.Fatal(err)
	}
	if err := h.Boot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := image(); got != "" {
		t.Fatalf("booted %q, want the previous deployment", got)
	}
	if _, staged, _ := h.Deployments(ctx); staged != nil {
		t.Fatalf("the lost deployment is still staged: %+v", staged)
	}
	if err := h.Rebase(ctx, "quay.io/os:2"); err != nil {
		t.Fatal(err)
	}
	if err := h.Boot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := image(); got != "quay.io/os:2" {
		t.Fatalf("booted %q after staging again, want quay.io/os:2", got)
	}
}
