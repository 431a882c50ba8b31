package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/ospkg"
	"github.com/mcotui/mcotui/core/ospull"
	"github.com/mcotui/mcotui/platform/host"
)

// Systemd is what the agent asks of the host's systemd; *host.Systemd implements it over
// D-Bus.
type Systemd interface {
	DaemonReload(ctx context.Context) error
	Restart(ctx context.Context, unit string) error
	Reload(ctx context.Context, unit string) error
	Enable(ctx context.Context, units ...string) error
	Disable(ctx context.Context, units ...string) error
	Mask(ctx context.Context, units ...string) error
	Unmask(ctx context.Context, units ...string) error
	UnitFileState(ctx context.Context, unit string) (string, error)
	// UnitStates is where systemd has each of units now (running, failed, starting).
	UnitStates(ctx context.Context, units ...string) ([]host.UnitState, error)
}

// UnitLogger reads the last lines of a unit's journal; *host.UnitLog implements it.
type UnitLogger interface {
	Tail(ctx context.Context, unit string, n int) ([]string, error)
}

// Rebooter reboots the node; *host.Logind implements it.
type Rebooter interface {
	Reboot(ctx context.Context) error
}

// OSUpdater changes kernel arguments, the OS image, the kernel and layered packages,
// and reads the host's deployments; *host.OSTree implements it.
type OSUpdater interface {
	Tools() []string
	// KernelArgsMethod is how the host's kernel arguments change (host.KargsNone: no way).
	KernelArgsMethod() host.KargsMethod
	SetKernelArguments(ctx context.Context, remove, add []string) error
	Rebase(ctx context.Context, imageURL string) error
	// StageImage downloads imageURL without deploying it (before the drain), and
	// says what it fetched; DeployStaged deploys it after the drain from what was
	// downloaded (host.OSTree: rpm-ostree --download-only / --cache-only, bootc
	// switch --download-only / --from-downloaded). StageImage calls progress, when
	// not nil, with how far the download is whenever the tool says more.
	StageImage(ctx context.Context, imageURL string, progress func(ospull.Progress)) (fetched string, err error)
	DeployStaged(ctx context.Context, imageURL string) error
	DiscardPending(ctx context.Context) error
	// RollbackOS makes the deployment booted before the current one the next boot's
	// (rpm-ostree rollback); idempotent.
	RollbackOS(ctx context.Context) error
	// Deployments are the booted deployment and the staged one (nil when none).
	Deployments(ctx context.Context) (booted, staged *host.Deployment, err error)
	// Layer runs one rpm-ostree package transaction (ospkg's arguments).
	Layer(ctx context.Context, args []string) error
}

// applier writes a plan to the host and takes it back off. Every method is idempotent:
// after a crash the agent calls the same one again.
type applier struct {
	root     *host.Root
	systemd  Systemd
	os       OSUpdater
	stateDir string
	// limits bound decoded contents (zero: ignconfig's defaults).
	limits ignconfig.Limits
	// wrote is called after each file this process writes, with the count so far; the
	// file failpoints hang on it.
	wrote func(n int)
	// writingFiles is true while stepFiles writes the update's files: the failpoints
	// inside a file write fire only then.
	writingFiles bool
	// cmdline is Config.CmdlineFile; arch is Config.Arch.
	cmdline, arch string
	// own are the agent's own files (ownPaths), which no config may write.
	own []string
	// staged is the OS image the node staged before the drain (stage.go), set by
	// stepOS: a rebase to it deploys the download. log receives the fall back to the
	// registry when the download is gone.
	staged string
	log    func(msg string, args ...any)
}

// RefusedError is the agent's refusal of an update's target config: what the config
// asks that the agent never does, or what the host holds that it never touches. It is
// found in Prepare, before the node is cordoned, and again just before the first write
// (the host may have changed during the drain); the update ends Failed with nothing
// written.
type RefusedError struct {
	Config string
	Err    error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing the config %s, nothing was written: %v", e.Config, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refuse checks everything about p that can be checked before anything is read or
// written, over the whole target config: the OS changes the host's tools can make, what
// ignconfig refuses (a unit named out of the unit directory, a file on /dev, contents
// over the limits, a bad data: URL), the agent's own state directory and binary, what
// the host holds at the paths the update writes (a link, a FIFO, a device), and every
// file's owner. It returns a *RefusedError or nil. Nothing on the host changes.
func (ap *applier) refuse(p *Plan) error {
	old, new, err := p.configs()
	if err != nil {
		return &RefusedError{Config: p.To, Err: err}
	}
	if err := ap.checkOS(p.Changes, new); err != nil {
		return &RefusedError{Config: p.To, Err: err}
	}
	var bad []string
	for _, r := range ignconfig.Refusals(new.Ignition, ap.limits) {
		bad = append(bad, r.Message)
	}
	bad = append(bad, ap.checkOwn(new)...)
	bad = append(bad, ap.checkPaths(touchedPaths(p.Changes, old, new))...)
	if len(bad) > 0 {
		return &RefusedError{Config: p.To, Err: errors.New(strings.Join(bad, "; "))}
	}
	// Every file's owner is worked out now, so that an unknown user fails the update
	// before anything is written (the contents were decoded, and dropped, above).
	if err := ap.eachFileToWrite(p, new, false, func(hostFile) error { return nil }); err != nil {
		return &RefusedError{Config: p.To, Err: err}
	}
	return nil
}

// prepare checks the update again (refuse), takes the snapshots and the original
// backups, and returns them for the journal. Nothing on the host changes.
func (ap *applier) prepare(ctx context.Context, id uint64, p *Plan) (snaps []Snapshot, origs []string, err error) {
	if err := ap.refuse(p); err != nil {
		return nil, nil, err
	}
	old, new, err := p.configs()
	if err != nil {
		return nil, nil, err
	}
	paths := touchedPaths(p.Changes, old, new)
	if snaps, err = ap.takeSnapshots(id, paths); err != nil {
		return nil, nil, err
	}
	for _, f := range p.Changes.Files.Added {
		took, err := ap.backupOrig(f)
		if err != nil {
			return nil, nil, err
		}
		if took {
			origs = append(origs, f)
		}
	}
	return snaps, origs, nil
}

// checkOS refuses, up front, changes the host cannot make.
func (ap *applier) checkOS(c configdiff.Changes, new configdiff.Config) error {
	tools := ap.os.Tools()
	switch {
	case c.KernelArguments != nil && ap.os.KernelArgsMethod() == host.KargsNone:
		return &host.NoKargsMethodError{}
	case c.OSImageURL != nil && c.OSImageURL.New != "" && len(tools) == 0:
		return &host.NoToolError{Change: "OS image", Need: "rpm-ostree or bootc"}
	case c.KernelType != nil && !slices.Contains(tools, host.RPMOSTree):
		return &host.NoToolError{Change: fmt.Sprintf("kernel type (%s to %s)", c.KernelType.Old, c.KernelType.New), Need: "rpm-ostree"}
	case c.Extensions != nil && !slices.Contains(tools, host.RPMOSTree):
		return &host.NoToolError{Change: "extensions", Need: "rpm-ostree"}
	case layering(c, new) && !slices.Contains(tools, host.RPMOSTree):
		return &host.NoToolError{Change: "OS image of a config with extensions or a kernel type (the packages are laid again on the new image)", Need: "rpm-ostree"}
	}
	if layering(c, new) {
		// What the packages would be is worked out now, so that an unknown extension
		// or a kernel the node's architecture lacks fails before anything is written.
		if _, err := ospkg.Packages(new.Extensions); err != nil {
			return fmt.Errorf("spec.extensions of %s: %w", new.Name, err)
		}
		if _, err := ospkg.SwitchKernelArgs(new.KernelType, ap.arch); err != nil {
			return fmt.Errorf("spec.kernelType of %s: %w", new.Name, err)
		}
	}
	return nil
}

// eachFileToWrite calls fn with each storage.files entry the update adds or changes, as
// a host file, in path order. With decode, each file's contents are decoded just before
// fn sees it and dropped after, so that one decoded file is held at a time; without,
// only the owner is worked out and Data is nil.
func (ap *applier) eachFileToWrite(p *Plan, new configdiff.Config, decode bool, fn func(hostFile) error) error {
	d := &ids{root: ap.root}
	paths := append(slices.Clone(p.Changes.Files.Added), p.Changes.Files.Changed...)
	slices.Sort(paths)
	for _, path := range paths {
		f := findFile(new, path)
		if f == nil {
			return fmt.Errorf("file %s is in the update's changes but not in %s", path, p.To)
		}
		hf, err := configFile(*f, d, ap.limits, decode)
		if err != nil {
			return err
		}
		if err := fn(hf); err != nil {
			return err
		}
	}
	return nil
}

// applyFiles writes the added and changed files and releases the removed ones. A file
// that already holds what the config says (after a crash, the files written before it)
// is not written again.
func (ap *applier) applyFiles(p *Plan) error {
	_, new, err := p.configs()
	if err != nil {
		return err
	}
	n := 0
	err = ap.eachFileToWrite(p, new, true, func(f hostFile) error {
		wrote, err := ap.ensure(f)
		if err != nil {
			return err
		}
		if wrote {
			n++
			if ap.wrote != nil {
				ap.wrote(n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, path := range p.Changes.Files.Removed {
		if err := ap.releasePath(path); err != nil {
			return err
		}
	}
	return nil
}

// ensure writes f unless the host already has it, and reports whether it wrote.
func (ap *applier) ensure(f hostFile) (bool, error) {
	if ap.holds(f) {
		return false, nil
	}
	if err := ap.root.WriteFile(f.Path, f.Data, f.Mode, f.UID, f.GID); err != nil {
		return false, fmt.Errorf("write %s %s: %w", f.What, f.Path, err)
	}
	return true, nil
}

// holds reports whether the host has f exactly: contents, mode and owner.
func (ap *applier) holds(f hostFile) bool {
	info, err := ap.root.Stat(f.Path)
	if err != nil || info.Mode != f.Mode || info.UID != f.UID || info.GID != f.GID || info.Size != int64(len(f.Data)) {
		return false
	}
	data, err := ap.root.ReadFileMax(f.Path, int64(len(f.Data)))
	return err == nil && bytes.Equal(data, f.Data)
}

// applyOS sets the kernel arguments, stages the OS image, then the kernel type and the
// extensions, as MCO's applyLayeredOSChanges does. All of it takes effect at the reboot
// that such changes always bring.
func (ap *applier) applyOS(ctx context.Context, p *Plan) error {
	c := p.Changes
	_, new, err := p.configs()
	if err != nil {
		return err
	}
	pkgs := layering(c, new)
	if pkgs {
		// The package steps work from the booted deployment, so whatever is staged
		// goes first (MCO: "always clean up pending"). That also makes a rerun after a
		// crash start from the same place: the kernel arguments and image below are
		// staged again.
		if err := ap.os.DiscardPending(ctx); err != nil {
			return err
		}
	}
	if k := c.KernelArguments; k != nil {
		if err := ap.os.SetKernelArguments(ctx, k.Old, k.New); err != nil {
			return err
		}
	}
	if !pkgs {
		return ap.rebase(ctx, c)
	}
	booted, _, err := ap.os.Deployments(ctx)
	if err != nil {
		return err
	}
	osUpdate := c.OSImageURL != nil && c.OSImageURL.New != ""
	if osUpdate || c.KernelType != nil {
		// The layered kernel depends on the OS release: it is taken off before a
		// rebase and put back on the new base after it.
		if err := ap.os.Layer(ctx, ospkg.RevertKernelArgs(booted.Deployment)); err != nil {
			return err
		}
	}
	if err := ap.rebase(ctx, c); err != nil {
		return err
	}
	if osUpdate || c.KernelType != nil {
		args, err := ospkg.SwitchKernelArgs(new.KernelType, ap.arch)
		if err != nil {
			return err
		}
		if err := ap.os.Layer(ctx, args); err != nil {
			return err
		}
	}
	if c.Extensions == nil && !osUpdate {
		return nil
	}
	args, err := ospkg.ExtensionArgs(booted.RequestedPackages, new.Extensions)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return nil
	}
	if err := ap.os.Layer(ctx, args); err != nil {
		return err
	}
	// rpm-ostree may finish without staging every package (OCPBUGS-65645): the staged
	// deployment must request them all before the node reboots into it.
	_, staged, err := ap.os.Deployments(ctx)
	if err != nil {
		return err
	}
	if staged == nil {
		return errors.New("rpm-ostree staged no deployment for the extensions")
	}
	missing, err := ospkg.MissingPackages(staged.Deployment, new.Extensions)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("the staged deployment lacks the extension packages %s", strings.Join(missing, ", "))
	}
	return nil
}

func (ap *applier) rebase(ctx context.Context, c configdiff.Changes) error {
	o := c.OSImageURL
	if o == nil || o.New == "" {
		return nil
	}
	if ap.staged == o.New {
		err := ap.os.DeployStaged(ctx, o.New)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// The download is gone (pruned, or a tool that lost it): the registry still
		// has the image, and the node is drained already; it costs the download time.
		if ap.log != nil {
			ap.log("the staged OS image could not be deployed; downloading it again", "image", o.New, "err", err)
		}
	}
	return ap.os.Rebase(ctx, o.New)
}

// layering reports whether an update involves rpm-ostree package transactions: a kernel
// type or extension change, or a new OS image under a config that layers packages
// (which must be laid again on the new base).
func layering(c configdiff.Changes, new configdiff.Config) bool {
	return c.KernelType != nil || c.Extensions != nil ||
		(c.OSImageURL != nil && c.OSImageURL.New != "" &&
			(len(new.Extensions) > 0 || ospkg.Canonical(new.KernelType) != ospkg.KernelDefault))
}

// revertOS undoes applyOS: every step only staged a deployment for the next boot, and
// dropping it undoes them all (MCO's rollback does the same). Dropping is safe when
// nothing was staged, so it needs no record of how far applyOS got.
func (ap *applier) revertOS(ctx context.Context, p *Plan) error {
	c := p.Changes
	if c.KernelArguments == nil && c.OSImageURL == nil && c.KernelType == nil && c.Extensions == nil {
		return nil
	}
	return ap.os.DiscardPending(ctx)
}
