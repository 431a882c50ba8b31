package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// Resolution of the directories above a managed file. Fedora CoreOS and RHCOS ship
// /home, /usr/local, /opt, /srv, /root and /mnt as links into /var, some relative
// (usr/local -> ../var/usrlocal), some absolute; a root that refused every link on the
// way could never write core's SSH keys. The kernel resolves such paths inside the root
// (openat2 RESOLVE_IN_ROOT): an absolute link is taken from the root, as under chroot,
// and ".." stops at the root, so no link, however it is made or swapped, leads out.
// RESOLVE_NO_MAGICLINKS refuses /proc's magic links (/proc/<pid>/root, /proc/self/fd/N),
// the one kind a chroot would still let out when the root has /proc mounted in it.

// maxResolveRetries bounds the retries of an openat2 that the kernel interrupted with
// EAGAIN because a rename or mount raced the lookup (RESOLVE_IN_ROOT checks for that
// rather than risk a ".." that escaped). A retry is one lookup; an endless race is an
// attack, not a host to wait for.
const maxResolveRetries = 1000

// openDirInRoot opens the directory dir (absolute, clean, as the host names it) inside
// the root rootfd, following links as the kernel does under chroot. Kernels before 5.6
// have no openat2 (ENOSYS; some container seccomp profiles answer EPERM): the lookup is
// then done by github.com/cyphar/filepath-securejoin, which walks it in user space with
// the same guarantee.
func openDirInRoot(rootfd int, dir string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range maxResolveRetries {
		fd, err := unix.Openat2(rootfd, dir, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return openDirSecurejoin(rootfd, dir)
		}
		return -1, err
	}
	return -1, fmt.Errorf("%s: the lookup raced a rename on the host %d times: %w", dir, maxResolveRetries, unix.EAGAIN)
}

// openDirSecurejoin is openDirInRoot without openat2.
func openDirSecurejoin(rootfd int, dir string) (int, error) {
	dup, err := unix.FcntlInt(uintptr(rootfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	root := os.NewFile(uintptr(dup), "root")
	defer root.Close()
	handle, err := pathrs.OpenatInRoot(root, dir)
	if err != nil {
		return -1, errnoOf(err)
	}
	defer handle.Close()
	f, err := pathrs.Reopen(handle, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, errnoOf(err)
	}
	// The descriptor now belongs to the caller, not to f's finalizer.
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	f.Close()
	return fd, err
}

// errnoOf unwraps the errno securejoin reports inside its path errors, so that both
// resolvers' errors are read the same way.
func errnoOf(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// openParent opens the directory holding p, resolved inside the root. With create,
// missing directories are made with mode 0755, as Ignition does, and each one's parent
// is fsynced before the walk goes on: the directory fsync that WriteFile ends with makes
// the file's name durable, not the names of directories made on the way to it, and a
// file whose directory is lost to a power cut is lost with it.
//
// A link on the way that leads to nothing inside the root is refused, with or without
// create: the kernel's mkdir would not make its target either (EEXIST), and CheckPath
// must refuse before an update writes anything rather than let a later write fail.
func (r *Root) openParent(p string, create bool) (int, error) {
	rootfd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: r.dir, Err: err}
	}
	defer unix.Close(rootfd)
	dir := path.Dir(p)
	fd, err := r.openDir(rootfd, dir)
	if err == nil {
		return fd, nil
	}
	if dir == "/" {
		return -1, &fs.PathError{Op: "open", Path: r.dir, Err: err}
	}
	// The slow way, one prefix at a time, to make what is missing and to name the
	// component that failed. Each prefix is resolved from the root again, so that a link
	// met on the way is taken from the root and not from the directory it sits in.
	parent, err := unix.FcntlInt(uintptr(rootfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	walked := ""
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		walked += "/" + name
		next, err := r.openDir(rootfd, walked)
		if errors.Is(err, unix.ENOENT) {
			if link, ok := readLinkAt(parent, name); ok {
				unix.Close(parent)
				return -1, &SymlinkError{Path: p, At: walked, Target: link, Why: dangling}
			}
			if create {
				err = unix.Mkdirat(parent, name, 0o755)
				if err == nil {
					err = unix.Fsync(parent)
				}
				if err == nil || errors.Is(err, unix.EEXIST) {
					next, err = r.openDir(rootfd, walked)
				}
			}
		}
		if err != nil {
			err = r.walkError(p, walked, parent, name, err)
			unix.Close(parent)
			return -1, err
		}
		unix.Close(parent)
		parent = next
	}
	return parent, nil
}

// walkError words why the component name (the host's walked) of p could not be
// opened as a directory in parent.
func (r *Root) walkError(p, walked string, parent int, name string, err error) error {
	link, isLink := readLinkAt(parent, name)
	switch {
	case errors.Is(err, unix.ELOOP):
		return &SymlinkError{Path: p, At: walked, Target: link, Why: loop}
	case errors.Is(err, unix.ENOTDIR) && isLink:
		return &SymlinkError{Path: p, At: walked, Target: link, Why: notDir}
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s: %s is not a directory on the host", p, walked)
	case errors.Is(err, unix.ENOENT) && isLink:
		// Made between the two looks: still a link to nothing.
		return &SymlinkError{Path: p, At: walked, Target: link, Why: dangling}
	case errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return &fs.PathError{Op: "open", Path: walked, Err: err}
}

// readLinkAt returns the target of name in dirfd if it is a symbolic link.
func readLinkAt(dirfd int, name string) (string, bool) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

// ResolveDir returns where the host's directory p is on the agent's own filesystem,
// links on the way resolved inside the root: the directory an inotify watch must be put
// on, since the kernel would resolve a watch's path outside the root. It is read back
// from /proc/self/fd, so the answer is the kernel's, not a guess.
func (r *Root) ResolveDir(p string) (string, error) {
	if p != "/" {
		if err := checkSyntax(p); err != nil {
			return "", err
		}
	}
	rootfd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: r.dir, Err: err}
	}
	defer unix.Close(rootfd)
	fd, err := r.openDir(rootfd, p)
	if err != nil {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: err}
	}
	defer unix.Close(fd)
	dir, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	return dir, nil
}
