// Package hostsim simulates the host side of a node for `mcotui demo`: systemd, logind's
// reboot and the OS updater, in process, over the files of a host root directory. The
// agent runs against it unchanged; only what a real host does outside the files (run
// units, reboot, switch OS images) is simulated, with delays of a real host's order of
// magnitude, jittered from an injected seed, and waited through an injected sleep.
package hostsim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcotui/mcotui/core/ospull"
	"github.com/mcotui/mcotui/platform/host"
)

// Delay is a duration drawn uniformly from [Min, Max] each time it is waited.
type Delay struct{ Min, Max time.Duration }

// Options configures a Host. Dir and BootIDFile are required.
type Options struct {
	// Dir is the host root: the directory the agent's host.Root is made on. Unit files
	// are looked up under it, in etc/systemd/system and usr/lib/systemd/system.
	Dir string
	// BootIDFile is the file the agent reads the boot id from; New writes the first one.
	BootIDFile string

	// Restart and Reload are how long a unit takes to restart or reload, DaemonReload a
	// daemon-reload, Reboot a reboot from the request to the node being up again.
	Restart, Reload, DaemonReload, Reboot Delay

	// Sleep waits d or until ctx ends. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Seed seeds the jitter of the delays.
	Seed uint64
	// Pull downloads an OS image (a rebase without a staged download, or StageImage)
	// and says what it fetched; nil downloads nothing and takes no time. A benchmark
	// points it at a registry throttled to a fixed rate.
	Pull func(ctx context.Context, image string) (fetched string, err error)
}

// Host is one simulated host. It satisfies the agent's Systemd, Rebooter and OSUpdater.
// Its methods may be called concurrently.
type Host struct {
	opts     Options
	rebooted chan struct{}

	mu      sync.Mutex
	rnd     *rand.Rand
	enabled map[string]bool
	masked  map[string]bool
	broken  map[string]string // unit -> why its restarts and reloads fail
	calls   []string
	boots   int
	// booted is the deployment the host runs; staged, when not nil, the one it boots
	// next (what Rebase and Layer built on top of booted).
	booted host.Deployment
	// previous is the deployment booted before booted, which RollbackOS goes back to.
	previous *host.Deployment
	staged   *host.Deployment
	// downloaded are the OS images StageImage fetched, which DeployStaged deploys
	// without going to the registry.
	downloaded map[string]bool
	// lose is how many of the next boots lose the staged deployment (LoseStaged).
	lose int
}

// LoseStaged makes the next n boots come up on the booted deployment, the staged one
// dropped, as when ostree-finalize-staged fails at shutdown or the bootloader falls
// back: what the agent must notice after its reboot, and stage again.
func (h *Host) LoseStaged(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lose = n
}

// New makes a host whose units are all disabled and unmasked, and writes its first boot
// id.
func New(opts Options) (*Host, error) {
	if opts.Dir == "" || opts.BootIDFile == "" {
		return nil, errors.New("hostsim: Dir and BootIDFile are required")
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("hostsim: host root %s is not a directory (%v)", opts.Dir, err)
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	h := &Host{
		opts: opts, rebooted: make(chan struct{}, 1),
		rnd:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		enabled: map[string]bool{}, masked: map[string]bool{}, broken: map[string]string{},
		downloaded: map[string]bool{},
	}
	if err := h.writeBootID(); err != nil {
		return nil, err
	}
	return h, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// wait sleeps one draw of d.
func (h *Host) wait(ctx context.Context, d Delay) error {
	h.mu.Lock()
	n := d.Min
	if d.Max > d.Min {
		n += time.Duration(h.rnd.Int64N(int64(d.Max-d.Min) + 1))
	}
	h.mu.Unlock()
	if n <= 0 {
		return ctx.Err()
	}
	return h.opts.Sleep(ctx, n)
}

func (h *Host) record(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call)
}

// Calls lists the calls made so far, in order: "restart chronyd.service", "reboot", ...
// A call that failed ends in " -> failed".
func (h *Host) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// Break makes every restart and reload of unit fail, as a unit whose service exits with
// an error does, until Repair.
func (h *Host) Break(unit, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broken[unit] = why
}

// Repair undoes Break.
func (h *Host) Repair(unit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.broken, unit)
}

// unitFile reports whether the host has a unit file for unit, where systemd would look.
func (h *Host) unitFile(unit string) bool {
	for _, dir := range []string{"etc/systemd/system", "usr/lib/systemd/system"} {
		if st, err := os.Stat(filepath.Join(h.opts.Dir, dir, unit)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// noUnit is systemd's answer for a unit without a unit file; it matches fs.ErrNotExist
// as host.Systemd's does.
func noUnit(op, unit string) error {
	return fmt.Errorf("%s unit %s: Unit %s not found: %w", op, unit, unit, fs.ErrNotExist)
}

// DaemonReload waits as systemd rereading its units would.
func (h *Host) DaemonReload(ctx context.Context) error {
	h.record("daemon-reload")
	return h.wait(ctx, h.opts.DaemonReload)
}

// Restart restarts unit: it fails for a unit without a unit file, a masked unit and a
// broken one (a *host.JobError with result "failed", as systemd reports a service that
// did not start).
func (h *Host) Restart(ctx context.Context, unit string) error {
	return h.job(ctx, "restart", unit, h.opts.Restart)
}

// Reload reloads unit, failing as Restart does.
func (h *Host) Reload(ctx context.Context, unit string) error {
	return h.job(ctx, "reload", unit, h.opts.Reload)
}

func (h *Host) job(ctx context.Context, op, unit string, d Delay) error {
	if !h.unitFile(unit) {
		h.record(op + " " + unit + " -> no unit")
		return noUnit(op, unit)
	}
	h.mu.Lock()
	masked, why := h.masked[unit], h.broken[unit]
	h.mu.Unlock()
	if masked {
		h.record(op + " " + unit + " -> masked")
		return fmt.Errorf("%s unit %s: Unit %s is masked", op, unit, unit)
	}
	if err := h.wait(ctx, d); err != nil {
		return fmt.Errorf("%s unit %s: %w", op, unit, err)
	}
	if why != "" {
		h.record(op + " " + unit + " -> failed")
		return fmt.Errorf("%w: %s", &host.JobError{Op: op, Unit: unit, Result: "failed"}, why)
	}
	h.record(op + " " + unit)
	return nil
}

// Enable enables units that have unit files; a masked unit is refused, as systemctl
// enable refuses it.
func (h *Host) Enable(_ context.Context, units ...string) error {
	return h.each("enable", units, func(u string) error {
		if h.masked[u] {
			return fmt.Errorf("enable unit %s: Unit file %s is masked", u, u)
		}
		h.enabled[u] = true
		return nil
	})
}

// Disable disables units that have unit files.
func (h *Host) Disable(_ context.Context, units ...string) error {
	return h.each("disable", units, func(u string) error { delete(h.enabled, u); return nil })
}

// Mask masks units, with or without unit files.
func (h *Host) Mask(_ context.Context, units ...string) error {
	for _, u := range units {
		h.record("mask " + u)
		h.mu.Lock()
		h.masked[u] = true
		h.mu.Unlock()
	}
	return nil
}

// Unmask unmasks units; unmasking a unit that is not masked changes nothing.
func (h *Host) Unmask(_ context.Context, units ...string) error {
	for _, u := range units {
		h.record("unmask " + u)
		h.mu.Lock()
		delete(h.masked, u)
		h.mu.Unlock()
	}
	return nil
}

func (h *Host) each(op string, units []string, do func(string) error) error {
	for _, u := range units {
		if !h.unitFile(u) {
			h.record(op + " " + u + " -> no unit")
			return noUnit(op, u)
		}
		h.mu.Lock()
		err := do(u)
		h.mu.Unlock()
		if err != nil {
			h.record(op + " " + u + " -> failed")
			return err
		}
		h.record(op + " " + u)
	}
	return nil
}

// UnitFileState is "masked", "enabled" or "disabled"; a unit with no unit file (and no
// mask) is an error matching fs.ErrNotExist.
func (h *Host) UnitFileState(_ context.Context, unit string) (string, error) {
	h.mu.Lock()
	masked, enabled := h.masked[unit], h.enabled[unit]
	h.mu.Unlock()
	switch {
	case masked:
		return "masked", nil
	case !h.unitFile(unit):
		return "", fmt.Errorf("unit file state of %s: %w", unit, fs.ErrNotExist)
	case enabled:
		return "enabled", nil
	}
	return "disabled", nil
}

// Reboot accepts a reboot, as logind does: it returns at once, and Rebooted says so.
func (h *Host) Reboot(context.Context) error {
	h.record("reboot")
	select {
	case h.rebooted <- struct{}{}:
	default: // one already pending
	}
	return nil
}

// Rebooted receives a value when a reboot has been asked for and Boot has not yet run.
func (h *Host) Rebooted() <-chan struct{} { return h.rebooted }

// Boot is the reboot itself: it waits the Reboot delay, then writes a new boot id. Stop
// the agent first, as the reboot would, and start it again after.
func (h *Host) Boot(ctx context.Context) error {
	if err := h.wait(ctx, h.opts.Reboot); err != nil {
		return err
	}
	return h.writeBootID()
}

// Boots is how many times the host has booted, the first boot included.
func (h *Host) Boots() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.boots
}

func (h *Host) writeBootID() error {
	h.mu.Lock()
	h.boots++
	if h.staged != nil && h.lose > 0 {
		h.lose--
		h.staged = nil
	}
	if h.staged != nil {
		prev := h.booted
		h.booted, h.staged, h.previous = *h.staged, nil, &prev
		h.booted.Booted, h.booted.Staged = true, false
	}
	id := fmt.Sprintf("%08x-sim-boot-%d", h.rnd.Uint32(), h.boots)
	h.mu.Unlock()
	if err := os.WriteFile(h.opts.BootIDFile, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("hostsim: write boot id: %w", err)
	}
	return nil
}

// Tools says the host is image-based: it has rpm-ostree.
func (h *Host) Tools() []string { return []string{host.RPMOSTree} }

// KernelArgsMethod is rpm-ostree's, the simulated host's only tool.
func (h *Host) KernelArgsMethod() host.KargsMethod { return host.KargsRPMOSTree }

// SetKernelArguments, Rebase and DiscardPending only record the call: nothing in the
// simulation boots a kernel or an image.
func (h *Host) SetKernelArguments(_ context.Context, remove, add []string) error {
	h.record(fmt.Sprintf("kargs remove %v add %v", remove, add))
	return nil
}

// Rebase records the call, downloads the image (Options.Pull) and stages it, which
// the next Boot boots.
func (h *Host) Rebase(ctx context.Context, imageURL string) error {
	h.record("rebase " + imageURL)
	if h.opts.Pull != nil {
		if _, err := h.opts.Pull(ctx, imageURL); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stage().Image = imageURL
	return nil
}

// StageImage records the call and downloads the image (Options.Pull) without staging
// a deployment, as rpm-ostree rebase --download-only does.
func (h *Host) StageImage(ctx context.Context, imageURL string, _ func(ospull.Progress)) (string, error) {
	h.record("rebase --download-only " + imageURL)
	fetched := ""
	if h.opts.Pull != nil {
		var err error
		if fetched, err = h.opts.Pull(ctx, imageURL); err != nil {
			return "", err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.downloaded[imageURL] = true
	return fetched, nil
}

// DeployStaged records the call and stages the downloaded image, as rpm-ostree rebase
// --cache-only does; an image StageImage did not download is an error, as there.
func (h *Host) DeployStaged(_ context.Context, imageURL string) error {
	h.record("rebase --cache-only " + imageURL)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.downloaded[imageURL] {
		return fmt.Errorf("hostsim: rebase --cache-only %s: the image was not downloaded", imageURL)
	}
	h.stage().Image = imageURL
	return nil
}

// RollbackOS records the call and makes the deployment booted before this one the next
// boot's, as rpm-ostree rollback does; with none, it fails as there.
func (h *Host) RollbackOS(context.Context) error {
	h.record("rollback")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.previous == nil {
		return errors.New("hostsim: rollback: no previous deployment")
	}
	d := *h.previous
	h.staged = &d
	return nil
}

// UnitStates says every unit with a unit file is active and the others not found: the
// simulated host runs its units and none fails.
func (h *Host) UnitStates(_ context.Context, units ...string) ([]host.UnitState, error) {
	out := make([]host.UnitState, len(units))
	for i, u := range units {
		out[i] = host.UnitState{Name: u, Load: "loaded", Active: "active", Sub: "running"}
		if !h.unitFile(u) {
			out[i].Load, out[i].Active, out[i].Sub = "not-found", "inactive", "dead"
		}
	}
	return out, nil
}

// DiscardPending records the call and drops what was staged.
func (h *Host) DiscardPending(context.Context) error {
	h.record("discard pending")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.staged = nil
	return nil
}

// Layer records an rpm-ostree package transaction and stages its --install and
// --uninstall packages; the kernel overrides are only recorded.
func (h *Host) Layer(_ context.Context, args []string) error {
	if len(args) == 0 {
		return nil
	}
	h.record("rpm-ostree " + strings.Join(args, " "))
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.stage()
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--install":
			d.RequestedPackages = append(d.RequestedPackages, args[i+1])
		case "--uninstall":
			d.RequestedPackages = slices.DeleteFunc(d.RequestedPackages, func(p string) bool { return p == args[i+1] })
		}
	}
	return nil
}

// Deployments returns the booted deployment and the staged one.
func (h *Host) Deployments(context.Context) (booted, staged *host.Deployment, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.booted
	b.Booted = true
	b.RequestedPackages = slices.Clone(b.RequestedPackages)
	if h.staged != nil {
		s := *h.staged
		s.RequestedPackages = slices.Clone(s.RequestedPackages)
		staged = &s
	}
	return &b, staged, nil
}

// stage returns the staged deployment, made from the booted one if there is none. The
// caller holds mu.
func (h *Host) stage() *host.Deployment {
	if h.staged == nil {
		d := h.booted
		d.RequestedPackages = slices.Clone(d.RequestedPackages)
		d.Booted, d.Staged = false, true
		h.staged = &d
	}
	return h.staged
}
