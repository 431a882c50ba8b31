package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcotui/mcotui/internal/durable"
	"github.com/mcotui/mcotui/platform/host"
)

// Rollback rests on snapshots: before an update writes anything, the current state of
// every path it may touch is copied to <state-dir>/updates/<id>/before/ and fsynced, and
// the list is journaled; only then does the first write happen. On failure each path is
// put back as its snapshot says. A crash between the journal record and the writes is
// harmless (the snapshots match the host), and a crash after some writes never
// re-snapshots: the journal says the snapshots were taken, and they are the originals.
//
// The whole write set is snapshotted in one step and journaled in one transaction,
// rather than path by path, so a 500-file update costs one journal commit, not 500.

func (ap *applier) snapshotDir(id uint64) string {
	return filepath.Join(ap.stateDir, "updates", strconv.FormatUint(id, 10), "before")
}

// takeSnapshots records what each path holds now.
func (ap *applier) takeSnapshots(id uint64, paths []string) ([]Snapshot, error) {
	dir := ap.snapshotDir(id)
	if err := durable.MkdirAll(dir); err != nil {
		return nil, err
	}
	out := make([]Snapshot, len(paths))
	errs := make([]error, len(paths))
	// Each snapshot is fsynced, and fsyncs issued together share the filesystem's
	// journal commits: a few workers make a 500-file snapshot cost a fraction of 500
	// sequential flushes, and still only flush the agent's own data (a syncfs(2) would
	// also wait for everything else dirty on /var, such as an image being pulled).
	work := make(chan int)
	var wg sync.WaitGroup
	for range snapshotWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i], errs[i] = ap.snapshot(dir, i, paths[i])
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Directories that do not exist yet will be made by the writes; a rollback takes
	// them away again (if still empty), deepest first.
	seen := map[string]bool{}
	for _, p := range paths {
		for d := path.Dir(p); d != "/" && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			if _, err := ap.root.Stat(d); isNotExist(err) {
				out = append(out, Snapshot{Path: d, Kind: snapAbsentDir})
			}
		}
	}
	// One directory sync makes every snapshot's name durable.
	if err := durable.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("snapshots before the update: %w", err)
	}
	return out, nil
}

// snapshotWorkers is how many snapshots are written and fsynced at once.
const snapshotWorkers = 8

// snapshot records what p holds, its contents (if a file) in dir/<i>.
func (ap *applier) snapshot(dir string, i int, p string) (Snapshot, error) {
	s := Snapshot{Path: p}
	info, err := ap.root.Stat(p)
	switch {
	case isNotExist(err):
		s.Kind = snapAbsent
		return s, nil
	case isLinkAt(err, p):
		s.Kind = snapSymlink
		return s, nil
	case err != nil:
		return s, fmt.Errorf("snapshot %s before the update: %w", p, err)
	}
	src, _, err := ap.root.Open(p)
	if err != nil {
		return s, fmt.Errorf("snapshot %s before the update: %w", p, err)
	}
	defer src.Close()
	s.Kind, s.Mode, s.UID, s.GID, s.File = snapFile, info.Mode, info.UID, info.GID, strconv.Itoa(i)
	// Written in place, not renamed: nothing refers to the file until the journal
	// record, which comes after it is synced. Copied, not read whole: a big file on the
	// host costs the agent a buffer, not its size in memory.
	if err := copySynced(filepath.Join(dir, s.File), src); err != nil {
		return s, fmt.Errorf("snapshot %s before the update: %w", p, err)
	}
	return s, nil
}

// copySynced writes what src holds to name and fsyncs it.
func copySynced(name string, src io.Reader) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// restoreSnapshots puts every path back as it was. It goes on past errors so that one
// bad path does not keep the others in their new state, and returns them all.
func (ap *applier) restoreSnapshots(id uint64, snaps []Snapshot) error {
	var errs []error
	var dirs []string
	for _, s := range snaps {
		var err error
		switch s.Kind {
		case snapAbsent:
			err = ap.root.Remove(s.Path)
			if isLinkAt(err, s.Path) {
				err = nil // a mask link the unit rollback takes away through systemd
			}
		case snapFile:
			var data []byte
			data, err = readStateFile(filepath.Join(ap.snapshotDir(id), s.File))
			if err == nil {
				err = ap.root.WriteFile(s.Path, data, s.Mode, s.UID, s.GID)
			}
		case snapSymlink:
			// Restored by the unit rollback (systemd masks the unit again).
		case snapAbsentDir:
			dirs = append(dirs, s.Path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", s.Path, err))
		}
	}
	// Deepest first, so a parent is empty by the time its turn comes.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		if err := ap.root.RemoveEmptyDir(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// isLinkAt reports whether err says p itself is a symbolic link.
func isLinkAt(err error, p string) bool {
	var se *host.SymlinkError
	return errors.As(err, &se) && se.At == p
}

// rollback undoes everything the update wrote: units back to their old enablement and
// masks around the restored files, the OS back to the old kernel arguments and image,
// then a daemon-reload so systemd sees the old units again.
func (ap *applier) rollback(ctx context.Context, id uint64, p *Plan) error {
	old, new, err := p.configs()
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, ap.unitsBeforeRestore(ctx, p, old, new))
	errs = append(errs, ap.restoreSnapshots(id, p.Snapshots))
	errs = append(errs, ap.unitsAfterRestore(ctx, p, old))
	if len(p.Changes.Units) > 0 {
		errs = append(errs, ap.systemd.DaemonReload(ctx), ap.syncUnitLinks())
	}
	errs = append(errs, ap.revertOS(ctx, p))
	for _, o := range p.OrigCreated {
		errs = append(errs, ap.dropOrig(o))
	}
	return errors.Join(errs...)
}
