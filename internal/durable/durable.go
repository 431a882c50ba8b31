// Package durable writes files so that a crash leaves either the old contents or the
// new, never a torn or missing file: temporary file, fsync, rename, fsync of the
// directory. The agent's state files and the store's journal are written through it,
// so that whatever a journal record points at is on disk before the record is.
//
// It imports nothing of the project, so that store (which may import only core) and
// the agent share it.
package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteFile replaces name with data, creating missing directories.
func WriteFile(name string, data []byte, mode fs.FileMode) error {
	return Copy(name, bytes.NewReader(data), mode)
}

// Copy replaces name with what src holds, creating missing directories.
func Copy(name string, src io.Reader, mode fs.FileMode) error {
	dir := filepath.Dir(name)
	if err := MkdirAll(dir); err != nil {
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
	return SyncDir(dir)
}

// Remove removes name if it exists and syncs its directory.
func Remove(name string) error {
	err := os.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return SyncDir(filepath.Dir(name))
}

// MkdirAll makes dir and its missing parents, syncing each parent it adds to.
func MkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return SyncDir(parent)
}

// SyncDir makes the names in dir durable: a file created, renamed or removed in it
// survives a crash once it returns.
func SyncDir(dir string) error {
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

// SyncFilesystem flushes the whole filesystem that holds path (syncfs(2)). It is for
// what another process wrote there without syncing and whose names this one cannot list
// beforehand, such as the links systemd makes and removes when it enables or masks a
// unit.
func SyncFilesystem(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync the filesystem of %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync the filesystem of %s: %w", path, err)
	}
	return nil
}
