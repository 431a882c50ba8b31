package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcotui/mcotui/internal/durable"
)

// Originals, as MCO keeps them in /etc/machine-config-daemon/orig and noorig: the first
// time a config takes over a path, what was there before (a file the OS shipped, an
// administrator's file) is kept under <state-dir>/orig/<path>, with its mode and owner,
// or, if nothing was there, a stamp under <state-dir>/noorig/<path>. When the path leaves
// the config the original comes back, or the file is removed. The backup is taken once:
// later updates of a managed file never overwrite it.

func (ap *applier) origPath(p string) string   { return filepath.Join(ap.stateDir, "orig", p) }
func (ap *applier) noorigPath(p string) string { return filepath.Join(ap.stateDir, "noorig", p) }

// hasOrig reports whether an original, or the stamp saying there was none, is recorded.
func (ap *applier) hasOrig(p string) bool {
	if _, err := os.Lstat(ap.origPath(p)); err == nil {
		return true
	}
	_, err := os.Lstat(ap.noorigPath(p))
	return err == nil
}

// backupOrig records what p holds now as its original, unless one is recorded already.
// It reports whether it recorded one.
func (ap *applier) backupOrig(p string) (bool, error) {
	if ap.hasOrig(p) {
		return false, nil
	}
	info, err := ap.root.Stat(p)
	if isNotExist(err) {
		return true, durable.WriteFile(ap.noorigPath(p), nil, 0o600)
	}
	if err != nil {
		return false, fmt.Errorf("back up the original %s: %w", p, err)
	}
	src, _, err := ap.root.Open(p)
	if err != nil {
		return false, fmt.Errorf("back up the original %s: %w", p, err)
	}
	defer src.Close()
	dst := ap.origPath(p)
	// Copied, not read whole: the original may be any size.
	if err := durable.Copy(dst, src, info.Mode.Perm()); err != nil {
		return false, err
	}
	// The owner and special bits ride on the backup itself, to be restored with it.
	if err := os.Lchown(dst, info.UID, info.GID); err != nil {
		return false, fmt.Errorf("back up the original %s: %w", p, err)
	}
	if err := os.Chmod(dst, info.Mode); err != nil {
		return false, fmt.Errorf("back up the original %s: %w", p, err)
	}
	return true, nil
}

// releasePath is what happens to p when it leaves the config: its original comes back,
// or it is removed. The record itself is dropped only when the update is done (dropOrig),
// so that a rollback can still find it.
func (ap *applier) releasePath(p string) error {
	data, err := os.ReadFile(ap.origPath(p))
	if errors.Is(err, fs.ErrNotExist) {
		return ap.root.Remove(p)
	}
	if err != nil {
		return fmt.Errorf("read the original of %s: %w", p, err)
	}
	st, err := os.Stat(ap.origPath(p))
	if err != nil {
		return fmt.Errorf("read the original of %s: %w", p, err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if err := ap.root.WriteFile(p, data, st.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), int(sys.Uid), int(sys.Gid)); err != nil {
		return fmt.Errorf("restore the original of %s: %w", p, err)
	}
	return nil
}

// dropOrig forgets p's original record.
func (ap *applier) dropOrig(p string) error {
	return errors.Join(durable.Remove(ap.origPath(p)), durable.Remove(ap.noorigPath(p)))
}

func readStateFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read the agent's state file %s: %w", name, err)
	}
	return data, nil
}
