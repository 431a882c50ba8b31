// Package host is mcotui's adapter to the node it runs on: files under a root prefix,
// systemd over D-Bus, reboots through logind, the boot id, kernel arguments and the OS
// image. The agent decides what to do; this package does it, durably and without ever
// leaving the root.
package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// Root is the host's filesystem as the agent sees it: "/" when the agent runs as a
// systemd unit, the host's mount (say /rootfs) when it runs in a DaemonSet pod.
//
// The directories above a path are resolved by the kernel inside the root (see
// openDirInRoot): links on the way are followed as chroot would, absolute ones from the
// root, and nothing leads out of it, whatever a concurrent change does. The file itself
// is then opened from that directory with O_NOFOLLOW: a managed file that is a link is
// refused, never written or read through.
type Root struct {
	dir string
	// openDir resolves a directory inside the root; tests swap in the fallback.
	openDir func(rootfd int, dir string) (int, error)
	// hook is told of the points inside WriteFile (writehook.go).
	hook func(point, path string)
}

// SymlinkError says a path ends at a symbolic link, or passes through one that cannot
// be followed inside the root.
type SymlinkError struct {
	Path   string // the path asked for
	At     string // the component that is a link
	Target string // where the link points, when it is one on the way to Path
	Why    string // why a link on the way cannot be followed; empty when At is Path
}

// The reasons a link on the way to a file is refused.
const (
	dangling = "which leads to nothing inside the root (links are resolved inside the root, as under chroot)"
	notDir   = "which is not a directory inside the root"
	loop     = "which leads through too many links or through a /proc magic link"
)

func (e *SymlinkError) Error() string {
	if e.Why == "" {
		return fmt.Sprintf("%s: %s is a symbolic link on the host; mcotui never writes or reads a file through a link", e.Path, e.At)
	}
	return fmt.Sprintf("%s: %s is a symbolic link on the host to %q, %s", e.Path, e.At, e.Target, e.Why)
}

// NewRoot returns the host filesystem rooted at dir, which must be an existing directory.
func NewRoot(dir string) (*Root, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("host root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("host root %s is not a directory", dir)
	}
	return &Root{dir: dir, openDir: openDirInRoot}, nil
}

// Dir is the root directory on the agent's own filesystem.
func (r *Root) Dir() string { return r.dir }

// CheckPath refuses a path the agent must never touch: one that is not absolute, not
// clean (".", "..", "//"), the root itself, that ends at a symbolic link on the host, or
// that passes through one leading to nothing, or to no directory, inside the root. Components that do not exist yet are fine: they will be created as
// directories. It changes nothing, so an update can check every path before writing
// any.
func (r *Root) CheckPath(p string) error {
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
	var st unix.Stat_t
	err = unix.Fstatat(dirfd, path.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &fs.PathError{Op: "stat", Path: p, Err: err}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &SymlinkError{Path: p, At: p}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return fmt.Errorf("%s is a directory on the host, not a file", p)
	}
	return nil
}

func checkSyntax(p string) error {
	switch {
	case !path.IsAbs(p):
		return fmt.Errorf("%q is not an absolute path", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path (it would be %q)", p, path.Clean(p))
	case p == "/":
		return errors.New(`"/" is not a file`)
	}
	return nil
}

// FileInfo is what the host has at a path.
type FileInfo struct {
	Mode     fs.FileMode // permission bits, setuid/setgid/sticky included
	UID, GID int
	Size     int64
}

// Stat describes the file at p without following links. A missing file is an error
// matching fs.ErrNotExist.
func (r *Root) Stat(p string) (FileInfo, error) {
	if err := checkSyntax(p); err != nil {
		return FileInfo{}, err
	}
	dirfd, err := r.openParent(p, false)
	if err != nil {
		return FileInfo{}, err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, path.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		}
		return FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return FileInfo{}, &SymlinkError{Path: p, At: p}
	}
	return FileInfo{Mode: unixMode(st.Mode), UID: int(st.Uid), GID: int(st.Gid), Size: st.Size}, nil
}

func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func posixMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	return mode
}

// ReadFile returns the contents of the regular file at p, refusing links.
func (r *Root) ReadFile(p string) ([]byte, error) {
	if err := checkSyntax(p); err != nil {
		return nil, err
	}
	dirfd, err := r.openParent(p, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, path.Base(p), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &SymlinkError{Path: p, At: p}
	case errors.Is(err, unix.ENOENT):
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile replaces the file at p with data, mode and owner, atomically and durably:
// the data goes to a temporary file in the same directory, which is fsynced, renamed
// over p, and then the directory is fsynced. After a crash p holds either the old
// contents or the new, never a mix; a leftover temporary file is harmless and named
// after p so it is recognisable. Missing parent directories are created.
func (r *Root) WriteFile(p string, data []byte, mode fs.FileMode, uid, gid int) error {
	if err := r.CheckPath(p); err != nil {
		return err
	}
	dirfd, err := r.openParent(p, true)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	base := path.Base(p)
	// One temporary name per file, not per write: a write a crash or power cut
	// interrupted leaves its temporary file behind, and the next write of the same file
	// (the resumed update's) removes it here instead of leaving it forever.
	tmp := tempName(base)
	if err := unix.Unlinkat(dirfd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove the leftover temporary file of", Path: p, Err: err}
	}
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "create", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = writeSynced(f, data, mode, uid, gid, func() { r.at(WriteTempWritten, p) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	r.at(WriteRenamed, p)
	if err := unix.Fsync(dirfd); err != nil {
		return &fs.PathError{Op: "sync directory of", Path: p, Err: err}
	}
	return nil
}

// tempName is where WriteFile writes base's new contents before renaming them over it.
func tempName(base string) string { return "." + base + ".mcotui-tmp" }

// writeSynced writes data and sets mode and owner explicitly (the umask must not decide
// a config's mode), then fsyncs so the rename that follows publishes complete data.
// written is called between the writes and the fsync.
func writeSynced(f *os.File, data []byte, mode fs.FileMode, uid, gid int, written func()) error {
	if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
		return err
	}
	if err := f.Chown(uid, gid); err != nil {
		return err
	}
	// After chown: chown clears setuid and setgid bits.
	if err := unix.Fchmod(int(f.Fd()), posixMode(mode)); err != nil {
		return err
	}
	written()
	return f.Sync()
}

// Remove deletes the file at p, durably (the directory is fsynced). A missing file is
// not an error: removal is idempotent, so a retried update can remove again.
func (r *Root) Remove(p string) error {
	if err := r.CheckPath(p); err != nil {
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
	if err := unix.Unlinkat(dirfd, path.Base(p), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: p, Err: err}
	}
	if err := unix.Fsync(dirfd); err != nil {
		return &fs.PathError{Op: "sync directory of", Path: p, Err: err}
	}
	return nil
}
