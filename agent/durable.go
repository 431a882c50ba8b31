package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The agent's own state files (snapshots, original backups) live in its state directory,
// on the agent's filesystem rather than the host root, and are written here with the
// same discipline as the host's files: temporary file, fsync, rename, fsync of the
// directory. Whatever a journal record points at is on disk before the record is.

// writeDurable replaces name with data, creating missing directories.
func writeDurable(name string, data []byte, mode fs.FileMode) error {
	return copyDurable(name, bytes.NewReader(data), mode)
}

// copyDurable replaces name with what src holds, creating missing directories.
func copyDurable(name string, src io.Reader, mode fs.FileMode) error {
	dir := filepath.Dir(name)
	if err := mkdirDurable(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return syncDir(dir)
}

// removeDurable removes name if it exists and syncs its directory.
func removeDurable(name string) error {
	err := os.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return syncDir(filepath.Dir(name))
}

// mkdirDurable makes dir and its missing parents, syncing each parent it adds to.
func mkdirDurable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
