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

// SpecialFileError says a path is a FIFO, a device or a socket on the host. Such a path
// is never read or replaced: opening a FIFO waits for a writer (forever, and on every
// restart of a journaled update), reading /dev/zero never ends, and replacing a device
// node by a file breaks whatever uses it.
type SpecialFileError struct {
	Path string
	Kind string // "FIFO", "character device", "block device", "socket"
}

func (e *SpecialFileError) Error() string {
	return fmt.Sprintf("%s is a %s on the host, not a regular file; mcotui never reads or replaces a FIFO, a device or a socket", e.Path, e.Kind)
}

// TooLargeError says a file on the host holds more than a read's limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s holds more than %d bytes on the host, more than mcotui reads", e.Path, e.Limit)
}

// special names the kind of a file type that is neither regular, directory nor link,
// or returns "".
func special(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFSOCK:
		return "socket"
	}
	return ""
}

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
// clean (".", "..", "//"), the root itself, that ends at a symbolic link, a directory, a
// FIFO, a device or a socket on the host, or that passes through a link leading to
// nothing, or to no directory, inside the root. Components that do not exist yet are
// fine: they will be created as directories. It changes nothing, so an update can check every path before writing
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
	case special(st.Mode) != "":
		return &SpecialFileError{Path: p, Kind: special(st.Mode)}
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
// matching fs.ErrNotExist; a FIFO, device or socket a *SpecialFileError.
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
	if k := special(st.Mode); k != "" {
		return FileInfo{}, &SpecialFileError{Path: p, Kind: k}
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

// DefaultReadLimit bounds ReadFile: the files it is for (the user database, the shadow
// file, a managed file to compare) are far smaller on any real host.
const DefaultReadLimit = 64 << 20

// ReadFile is ReadFileMax with DefaultReadLimit.
func (r *Root) ReadFile(p string) ([]byte, error) { return r.ReadFileMax(p, DefaultReadLimit) }

// ReadFileMax returns the contents of the regular file at p, refusing links, FIFOs,
// devices and sockets, and a file of more than max bytes (a *TooLargeError): what is
// read is bounded whatever the host holds.
func (r *Root) ReadFileMax(p string, max int64) ([]byte, error) {
	f, size, err := r.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, &TooLargeError{Path: p, Limit: max}
	}
	// The file may grow between the stat and the read: the read stops one byte past max.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: p, Limit: max}
	}
	return data, nil
}

// Open opens the regular file at p for reading and returns its size, refusing links,
// directories, FIFOs, devices and sockets. The type is checked on the open file itself
// (fstat), so a path swapped for a FIFO after a Stat is refused too, and the open does
// not wait for a FIFO's writer (O_NONBLOCK, which a regular file ignores).
func (r *Root) Open(p string) (*os.File, int64, error) {
	if err := checkSyntax(p); err != nil {
		return nil, 0, err
	}
	dirfd, err := r.openParent(p, false)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, path.Base(p), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, 0, &SymlinkError{Path: p, At: p}
	case errors.Is(err, unix.ENOENT):
		return nil, 0, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	case errors.Is(err, unix.ENXIO):
		// A socket, or a FIFO with no writer on some kernels: say what it is.
		var st unix.Stat_t
		if unix.Fstatat(dirfd, path.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && special(st.Mode) != "" {
			return nil, 0, &SpecialFileError{Path: p, Kind: special(st.Mode)}
		}
		return nil, 0, &fs.PathError{Op: "open", Path: p, Err: err}
	case err != nil:
		return nil, 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	switch {
	case special(st.Mode) != "":
		unix.Close(fd)
		return nil, 0, &SpecialFileError{Path: p, Kind: special(st.Mode)}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s is a directory on the host, not a file", p)
	}
	// Back to blocking reads: os.File would otherwise register the fd with the poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), st.Size, nil
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
