package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/internal/durable"
)

// Units are applied in the order systemd needs (MCO's writeUnits, with the ordering
// rules systemd imposes made explicit):
//   - a unit is unmasked before its file is written (the mask is a link at that very
//     path), and its regular file removed before it is masked (systemd refuses to mask
//     over a unit file in /etc/systemd/system);
//   - a unit is disabled before its file is removed (systemd cannot disable a unit it
//     cannot find);
//   - drop-ins are written before enabling, so [Install] from a drop-in counts;
//   - one daemon-reload at the end, so systemd loads the new files.
//
// Every call is safe to repeat: enabling an enabled unit, masking a masked one and
// writing a file the host already holds change nothing.

// applyUnits brings every changed unit from old to new.
func (ap *applier) applyUnits(ctx context.Context, p *Plan) error {
	if len(p.Changes.Units) == 0 {
		return nil
	}
	old, new, err := p.configs()
	if err != nil {
		return err
	}
	for _, uc := range p.Changes.Units {
		if err := ap.applyUnit(ctx, uc, findUnit(old, uc.Name), findUnit(new, uc.Name)); err != nil {
			return err
		}
	}
	if err := ap.systemd.DaemonReload(ctx); err != nil {
		return err
	}
	return ap.syncUnitLinks()
}

// syncUnitLinks makes durable the links systemd made or removed for enablement and
// masks. systemd does not sync them, and once the journal's next phase says the units
// are applied nothing makes them again: a power cut then (before the reboot, say) would
// boot a node whose mask or .wants link is gone, and Validate would refuse it forever.
func (ap *applier) syncUnitLinks() error {
	dir, err := ap.root.ResolveDir(unitDir)
	if errors.Is(err, fs.ErrNotExist) {
		// No unit directory yet (a bare root): whatever systemd made is on the root's
		// filesystem.
		dir, err = ap.root.Dir(), nil
	}
	if err != nil {
		return fmt.Errorf("sync the links systemd made in %s: %w", unitDir, err)
	}
	return durable.SyncFilesystem(dir)
}

func (ap *applier) applyUnit(ctx context.Context, uc configdiff.UnitChange, ou, nu *types.Unit) error {
	name := uc.Name
	if nu == nil { // the unit leaves the config
		if enabled(ou) {
			if err := ap.systemd.Disable(ctx, name); err != nil && !isNotExist(err) {
				return err
			}
		}
		if masked(ou) {
			if err := ap.systemd.Unmask(ctx, name); err != nil {
				return err
			}
		}
		for _, d := range uc.Dropins.All() {
			if err := ap.root.Remove(dropinPath(name, d)); err != nil {
				return fmt.Errorf("remove drop-in %s/%s: %w", name, d, err)
			}
		}
		if ou.Contents != nil {
			if err := ap.root.Remove(unitPath(name)); err != nil {
				return fmt.Errorf("remove unit %s: %w", name, err)
			}
		}
		return nil
	}

	if !masked(nu) && masked(ou) {
		if err := ap.systemd.Unmask(ctx, name); err != nil {
			return err
		}
	}
	if err := ap.applyDropins(uc, nu); err != nil {
		return err
	}
	if masked(nu) {
		// systemd masks only over nothing or a link: take a unit file of ours away first.
		if err := ap.removeUnitFile(name); err != nil {
			return err
		}
		return ap.systemd.Mask(ctx, name)
	}
	if f, ok := unitFile(*nu); ok {
		if _, err := ap.ensure(f); err != nil {
			return err
		}
	} else if uc.Contents {
		if err := ap.removeUnitFile(name); err != nil {
			return err
		}
	}
	switch {
	case enabled(nu):
		return ap.systemd.Enable(ctx, name)
	case disabled(nu):
		if err := ap.systemd.Disable(ctx, name); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

func (ap *applier) applyDropins(uc configdiff.UnitChange, nu *types.Unit) error {
	byName := map[string]types.Dropin{}
	for _, d := range nu.Dropins {
		byName[d.Name] = d
	}
	for _, name := range append(append([]string(nil), uc.Dropins.Added...), uc.Dropins.Changed...) {
		if f, ok := dropinFile(*nu, byName[name]); ok {
			if _, err := ap.ensure(f); err != nil {
				return err
			}
		} else if err := ap.root.Remove(dropinPath(uc.Name, name)); err != nil {
			return fmt.Errorf("remove drop-in %s/%s: %w", uc.Name, name, err)
		}
	}
	for _, name := range uc.Dropins.Removed {
		if err := ap.root.Remove(dropinPath(uc.Name, name)); err != nil {
			return fmt.Errorf("remove drop-in %s/%s: %w", uc.Name, name, err)
		}
	}
	return nil
}

// removeUnitFile removes the unit's regular file in /etc/systemd/system, leaving a link
// (an existing mask) to systemd.
func (ap *applier) removeUnitFile(name string) error {
	err := ap.root.Remove(unitPath(name))
	if isLinkAt(err, unitPath(name)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove unit %s: %w", name, err)
	}
	return nil
}

// unitsBeforeRestore is the first half of a unit rollback, before the files come back:
// units the update enabled are disabled while their files still exist, and units it
// masked are unmasked so their files can be written again.
func (ap *applier) unitsBeforeRestore(ctx context.Context, p *Plan, old, new configdiff.Config) error {
	for _, uc := range p.Changes.Units {
		ou, nu := findUnit(old, uc.Name), findUnit(new, uc.Name)
		if enabled(nu) && !enabled(ou) {
			if err := ap.systemd.Disable(ctx, uc.Name); err != nil && !isNotExist(err) {
				return err
			}
		}
		if masked(nu) && !masked(ou) {
			if err := ap.systemd.Unmask(ctx, uc.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// unitsAfterRestore is the second half: the old masks and enablement, on the old files.
func (ap *applier) unitsAfterRestore(ctx context.Context, p *Plan, old configdiff.Config) error {
	for _, uc := range p.Changes.Units {
		ou := findUnit(old, uc.Name)
		switch {
		case ou == nil:
		case masked(ou):
			if err := ap.removeUnitFile(uc.Name); err != nil {
				return err
			}
			if err := ap.systemd.Mask(ctx, uc.Name); err != nil {
				return err
			}
		case enabled(ou):
			if err := ap.systemd.Enable(ctx, uc.Name); err != nil {
				return err
			}
		case disabled(ou):
			if err := ap.systemd.Disable(ctx, uc.Name); err != nil && !isNotExist(err) {
				return err
			}
		}
	}
	return nil
}
