package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// MkdirAll makes sure the directory p exists with mode and owner, creating missing
// directories above it as WriteFile does (0755, root's), and p itself if needed. An
// existing p gets mode and owner set, so that a directory whose permissions matter
// (the core user's ~/.ssh, 0700) converges on them. Links above p are resolved inside
// the root, as for every Root method; p itself being a link is refused, since its mode
// and owner would be set on whatever it points to. The parent is fsynced so a new
// directory survives a crash.
func (r *Root) MkdirAll(p string, mode fs.FileMode, uid, gid int) error {
	if err := checkSyntax(p); err != nil {
		return err
	}
	dirfd, err := r.openParent(p, true)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	base := path.Base(p)
	if err := unix.Mkdirat(dirfd, base, posixMode(mode)); err != nil && !errors.Is(err, unix.EEXIST) {
		return &fs.PathError{Op: "mkdir", Path: p, Err: err}
	}
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return &SymlinkError{Path: p, At: p}
	case errors.Is(err, unix.ENOTDIR):
		// O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR on some kernels, ELOOP on others.
		if _, isLink := readLinkAt(dirfd, base); isLink {
			return &SymlinkError{Path: p, At: p}
		}
		return &fs.PathError{Op: "mkdir", Path: p, Err: err}
	case err != nil:
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &fs.PathError{Op: "chown", Path: p, Err: err}
	}
	if err := unix.Fchmod(fd, posixMode(mode)); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: err}
	}
	if err := unix.Fsync(dirfd); err != nil {
		return &fs.PathError{Op: "sync directory of", Path: p, Err: err}
	}
	return nil
}

// RemoveEmptyDir removes the directory p if it is empty, durably, and does nothing if it
// is missing or not empty: a rollback takes away the directories an update created, but
// never anything someone put in them since.
func (r *Root) RemoveEmptyDir(p string) error {
	if err := checkSyntax(p); err != nil {
		return err
	}
	dirfd, err := r.openParent(p, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	err = unix.Unlinkat(dirfd, path.Base(p), unix.AT_REMOVEDIR)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		return nil
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory on the host", p)
	case err != nil:
		return &fs.PathError{Op: "rmdir", Path: p, Err: err}
	}
	if err := unix.Fsync(dirfd); err != nil {
		return &fs.PathError{Op: "sync directory of", Path: p, Err: err}
	}
	return nil
}
