package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noOpenat2Env, set in a child test process, makes the kernel refuse openat2 in it
// (ENOSYS, as kernels before 5.6 answer) so the securejoin fallback is what runs.
const noOpenat2Env = "MCOTUI_TEST_NO_OPENAT2"

func TestMain(m *testing.M) {
	if os.Getenv(noOpenat2Env) != "" {
		if err := refuseOpenat2(); err != nil {
			fmt.Fprintln(os.Stderr, "refuse openat2:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// refuseOpenat2 installs a seccomp filter on every thread of the process that answers
// openat2 with ENOSYS and lets every other call through.
func refuseOpenat2() error {
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_OPENAT2},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return errno
	}
	_, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_RDONLY})
	if !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("openat2 after the filter: %v, want ENOSYS", err)
	}
	return nil
}

// resolvers are both ways openParent resolves a directory. On this kernel the library
// itself uses openat2; TestResolveWithoutOpenat2 runs the same tests where it cannot.
var resolvers = map[string]func(int, string) (int, error){
	"openat2":    openDirInRoot,
	"securejoin": openDirSecurejoin,
}

func forEachResolver(t *testing.T, test func(t *testing.T, newRoot func(dir string) *Root)) {
	for name, resolve := range resolvers {
		t.Run(name, func(t *testing.T) {
			test(t, func(dir string) *Root {
				r, err := NewRoot(dir)
				if err != nil {
					t.Fatal(err)
				}
				r.openDir = resolve
				return r
			})
		})
	}
}

// ostreeLinks are the links Fedora CoreOS and RHCOS have at the top of their root.
var ostreeLinks = map[string]string{
	"home":      "var/home",
	"usr/local": "../var/usrlocal",
	"opt":       "var/opt",
	"srv":       "var/srv",
	"root":      "var/roothome",
	"mnt":       "var/mnt",
}

// ostreeRoot lays out dir like an ostree system's root: the links above (absolute ones,
// "/var/home", when absolute), their targets, and /var/home/core.
func ostreeRoot(t *testing.T, dir string, absolute bool) {
	t.Helper()
	for link, target := range ostreeLinks {
		abs := filepath.Join(filepath.Dir(filepath.Join(dir, link)), target)
		must(t, os.MkdirAll(abs, 0o755))
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755))
		if absolute {
			rel, err := filepath.Rel(dir, abs)
			must(t, err)
			target = "/" + rel
		}
		must(t, os.Symlink(target, filepath.Join(dir, link)))
	}
	must(t, os.MkdirAll(filepath.Join(dir, "var/home/core"), 0o700))
	must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
}

func TestOstreeLayoutWritesThroughItsLinks(t *testing.T) {
	forEachResolver(t, func(t *testing.T, newRoot func(string) *Root) {
		for _, absolute := range []bool{false, true} {
			t.Run(fmt.Sprintf("absolute=%v", absolute), func(t *testing.T) {
				dir := t.TempDir()
				ostreeRoot(t, dir, absolute)
				r := newRoot(dir)
				uid, gid := os.Getuid(), os.Getgid()
				lands := map[string]string{
					"/home/core/.ssh/authorized_keys.d/ignition": "var/home/core/.ssh/authorized_keys.d/ignition",
					"/usr/local/bin/x":                           "var/usrlocal/bin/x",
					"/opt/app/conf":                              "var/opt/app/conf",
					"/srv/www/index.html":                        "var/srv/www/index.html",
					"/root/.bashrc":                              "var/roothome/.bashrc",
					"/mnt/data/marker":                           "var/mnt/data/marker",
				}
				// As the agent writes core's keys: both directories first, then the file.
				must(t, r.MkdirAll("/home/core/.ssh", 0o700, uid, gid))
				must(t, r.MkdirAll("/home/core/.ssh/authorized_keys.d", 0o700, uid, gid))
				for p, want := range lands {
					must(t, r.CheckPath(p))
					must(t, r.WriteFile(p, []byte(p), 0o600, uid, gid))
					got, err := os.ReadFile(filepath.Join(dir, want))
					if err != nil || string(got) != p {
						t.Errorf("%s: %s holds %q, %v", p, want, got, err)
					}
					if data, err := r.ReadFile(p); err != nil || string(data) != p {
						t.Errorf("ReadFile %s = %q, %v", p, data, err)
					}
					if info, err := r.Stat(p); err != nil || info.Mode != 0o600 || info.Size != int64(len(p)) {
						t.Errorf("Stat %s = %+v, %v", p, info, err)
					}
				}
				if st, err := os.Stat(filepath.Join(dir, "var/home/core/.ssh")); err != nil || st.Mode().Perm() != 0o700 {
					t.Errorf("~core/.ssh = %v, %v", st, err)
				}
				// The links are still links: nothing replaced them with directories.
				for link := range ostreeLinks {
					if st, err := os.Lstat(filepath.Join(dir, link)); err != nil || st.Mode()&fs.ModeSymlink == 0 {
						t.Errorf("/%s is no longer a link: %v %v", link, st, err)
					}
				}
				for p, want := range lands {
					must(t, r.Remove(p))
					if _, err := os.Lstat(filepath.Join(dir, want)); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("Remove %s left %s: %v", p, want, err)
					}
				}
				must(t, r.RemoveEmptyDir("/usr/local/bin"))
				if _, err := os.Lstat(filepath.Join(dir, "var/usrlocal/bin")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("RemoveEmptyDir /usr/local/bin: %v", err)
				}
				// A directory that is itself one of the links is not a managed file.
				var se *SymlinkError
				if err := r.MkdirAll("/home", 0o755, uid, gid); !errors.As(err, &se) || se.At != "/home" {
					t.Errorf("MkdirAll /home = %v, want a refusal of the link", err)
				}
				if _, err := r.Stat("/home"); !errors.As(err, &se) || se.At != "/home" {
					t.Errorf("Stat /home = %v, want the link reported", err)
				}
				got, err := r.ResolveDir("/home/core")
				if want := filepath.Join(dir, "var/home/core"); err != nil || got != want {
					t.Errorf("ResolveDir /home/core = %q, %v; want %q", got, err, want)
				}
			})
		}
	})
}

func TestManagedFileThatIsALinkIsRefused(t *testing.T) {
	forEachResolver(t, func(t *testing.T, newRoot func(string) *Root) {
		dir := t.TempDir()
		ostreeRoot(t, dir, false)
		r := newRoot(dir)
		keys := "/home/core/.ssh/authorized_keys.d/ignition"
		must(t, os.MkdirAll(filepath.Join(dir, "var/home/core/.ssh/authorized_keys.d"), 0o700))
		must(t, os.WriteFile(filepath.Join(dir, "etc/target"), []byte("target\n"), 0o644))
		must(t, os.Symlink("/etc/target", filepath.Join(dir, "var/home/core/.ssh/authorized_keys.d/ignition")))
		before := snapshot(t, dir)
		for op, do := range map[string]func() error{
			"check":  func() error { return r.CheckPath(keys) },
			"write":  func() error { return r.WriteFile(keys, []byte("x"), 0o600, 0, 0) },
			"remove": func() error { return r.Remove(keys) },
			"read":   func() error { _, err := r.ReadFile(keys); return err },
			"stat":   func() error { _, err := r.Stat(keys); return err },
			"mkdir":  func() error { return r.MkdirAll(keys, 0o700, 0, 0) },
		} {
			var se *SymlinkError
			if err := do(); !errors.As(err, &se) || se.At != keys || se.Why != "" {
				t.Errorf("%s: %v, want the file itself refused as a link", op, err)
			} else if !strings.Contains(err.Error(), keys+" is a symbolic link on the host") {
				t.Errorf("%s: %q", op, err)
			}
		}
		if after := snapshot(t, dir); after != before {
			t.Fatalf("a refused operation changed the root:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// escapes are links that would lead out of a root resolved naively (by the agent's own
// filesystem). Each is put at var/home in an ostree root, under which outside has a
// core directory for a naive write to land in.
func escapes(root, outside string) map[string]func(t *testing.T) {
	up := strings.Repeat("../", strings.Count(root, "/")+2)
	home := filepath.Join(root, "var/home")
	link := func(target string) func(t *testing.T) {
		return func(t *testing.T) {
			must(t, os.RemoveAll(home))
			must(t, os.Symlink(target, home))
		}
	}
	return map[string]func(t *testing.T){
		"relative up":   link(up + strings.TrimPrefix(outside, "/")),
		"absolute":      link(outside),
		"magic link":    link("/proc/self/root" + outside),
		"dot-dot":       link(".."),
		"dot-dot chain": link("../../../../../.."),
		"chain": func(t *testing.T) {
			must(t, os.Symlink(up+strings.TrimPrefix(outside, "/"), filepath.Join(root, "etc/c")))
			must(t, os.Symlink("/etc/c", filepath.Join(root, "etc/b")))
			must(t, os.Symlink("../etc/b", filepath.Join(root, "etc/a")))
			link("../etc/a")(t)
		},
		"loop": func(t *testing.T) {
			must(t, os.Symlink("/etc/loop2", filepath.Join(root, "etc/loop1")))
			must(t, os.Symlink("/etc/loop1", filepath.Join(root, "etc/loop2")))
			link("/etc/loop1")(t)
		},
	}
}

func TestLinksThatTryToEscapeStayInTheRoot(t *testing.T) {
	forEachResolver(t, func(t *testing.T, newRoot func(string) *Root) {
		base := t.TempDir()
		names := escapes("/x", "/y")
		for name := range names {
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(base, strings.ReplaceAll(name, " ", "-"))
				root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
				must(t, os.MkdirAll(filepath.Join(outside, "core"), 0o755))
				ostreeRoot(t, root, false)
				escapes(root, outside)[name](t)
				r := newRoot(root)
				before := snapshot(t, outside)
				uid, gid := os.Getuid(), os.Getgid()
				errs := []error{
					r.CheckPath("/home/core/f"),
					r.WriteFile("/home/core/f", []byte("x"), 0o644, uid, gid),
					r.MkdirAll("/home/core/.ssh", 0o700, uid, gid),
					r.WriteFile("/home/core/.ssh/g", []byte("x"), 0o644, uid, gid),
					r.Remove("/home/core/f"),
				}
				if after := snapshot(t, outside); after != before {
					t.Fatalf("a write escaped the root (errors %v):\nbefore:\n%s\nafter:\n%s", errs, before, after)
				}
				// Whatever was written is inside the root.
				entries, _ := os.ReadDir(dir)
				if len(entries) != 2 {
					t.Fatalf("%s holds %v, want only root and outside", dir, entries)
				}
				t.Logf("%s: errors %v", name, errs)
			})
		}
	})
}

func TestMagicLinkIsRefusedByTheKernel(t *testing.T) {
	// The one root with a /proc in it that a test can use without mounting one: "/".
	// Only reads: nothing is written to this machine.
	r, err := NewRoot("/")
	must(t, err)
	var se *SymlinkError
	if err := r.CheckPath("/proc/self/root/etc/passwd"); !errors.As(err, &se) || se.Why != loop || se.At != "/proc/self/root" {
		t.Fatalf("CheckPath through /proc/self/root = %v, want it refused as a magic link", err)
	}
	if _, err := r.ReadFile("/proc/self/root/etc/passwd"); !errors.As(err, &se) {
		t.Fatalf("ReadFile through /proc/self/root = %v", err)
	}
	if _, err := r.ReadFile("/etc/passwd"); err != nil {
		t.Fatalf("ReadFile /etc/passwd from /: %v", err)
	}
}

// TestSwappedDirectoryCannotRedirectAWrite swaps /var/home between the real directory
// and a link out of the root (renameat2 RENAME_EXCHANGE, atomic) while writing through
// /home in a loop: whichever the resolution meets, the write stays inside the root.
func TestSwappedDirectoryCannotRedirectAWrite(t *testing.T) {
	forEachResolver(t, func(t *testing.T, newRoot func(string) *Root) {
		base := t.TempDir()
		root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
		must(t, os.MkdirAll(filepath.Join(outside, "core"), 0o755))
		ostreeRoot(t, root, false)
		up := strings.Repeat("../", strings.Count(root, "/")+2)
		evil := filepath.Join(root, "var/evil")
		must(t, os.Symlink(up+strings.TrimPrefix(outside, "/"), evil))
		r := newRoot(root)
		before := snapshot(t, outside)

		const writes = 500
		var stop atomic.Bool
		var swaps int
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "var/home"), unix.AT_FDCWD, evil, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
				swaps++
			}
		})
		var written, refused int
		for i := range writes {
			err := r.WriteFile("/home/core/f", []byte(fmt.Sprint(i)), 0o644, os.Getuid(), os.Getgid())
			if err != nil {
				refused++
			} else {
				written++
			}
		}
		stop.Store(true)
		wg.Wait()
		if after := snapshot(t, outside); after != before {
			t.Fatalf("a write went through the swapped link:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		t.Logf("%d writes, %d refused, during %d swaps", written, refused, swaps)
	})
}

// TestDanglingLinkIsRefusedBeforeAnyWrite: a link on the way that leads to nothing
// inside the root is refused by CheckPath, so an update can refuse before writing.
func TestDanglingLinkIsRefusedBeforeAnyWrite(t *testing.T) {
	forEachResolver(t, func(t *testing.T, newRoot func(string) *Root) {
		dir := t.TempDir()
		outside := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		must(t, os.Symlink(outside, filepath.Join(dir, "etc/mcotui")))
		r := newRoot(dir)
		var se *SymlinkError
		err := r.CheckPath("/etc/mcotui/a/b.conf")
		if !errors.As(err, &se) || se.At != "/etc/mcotui" || se.Target != outside || se.Why != dangling {
			t.Fatalf("CheckPath = %v", err)
		}
		if !strings.Contains(err.Error(), "/etc/mcotui is a symbolic link on the host") {
			t.Fatalf("error %q does not name the link", err)
		}
		if err := r.WriteFile("/etc/mcotui/a/b.conf", nil, 0o644, 0, 0); !errors.As(err, &se) {
			t.Fatalf("WriteFile = %v", err)
		}
		// Removing through it is not "already gone": the path cannot be resolved.
		if err := r.Remove("/etc/mcotui/a/b.conf"); !errors.As(err, &se) {
			t.Fatalf("Remove = %v", err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Fatalf("written outside: %v", entries)
		}
	})
}

// TestResolveWithoutOpenat2 runs the resolution tests again in a process where the
// kernel refuses openat2, as kernels before 5.6 do, so the fallback walk is what runs.
func TestResolveWithoutOpenat2(t *testing.T) {
	if os.Getenv(noOpenat2Env) != "" {
		return // the child itself
	}
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.v",
		"-test.run=^(TestOstreeLayoutWritesThroughItsLinks|TestManagedFileThatIsALinkIsRefused|TestLinksThatTryToEscapeStayInTheRoot|TestSwappedDirectoryCannotRedirectAWrite|TestDanglingLinkIsRefusedBeforeAnyWrite|TestRefusedPathsWriteNothing|TestMkdirAllRefusesSymlink)$")
	cmd.Env = append(os.Environ(), noOpenat2Env+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("without openat2: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "--- PASS"); n < 7 {
		t.Fatalf("without openat2, only %d tests passed:\n%s", n, out)
	}
}

// FuzzResolveStaysInRoot lays out links from the fuzzer's lines ("name -> target", name
// relative to the root, target anything) in a root next to a directory outside it, then
// writes, makes, reads and removes p: whatever the layout, nothing outside the root
// changes, and a file written is in the root.
func FuzzResolveStaysInRoot(f *testing.F) {
	f.Add("home -> var/home\nvar/home -> ../../outside", "/home/core/f")
	f.Add("a -> /proc/self/root/outside\nb -> ../a", "/b/x")
	f.Add("etc/x -> ../../../../../../../../outside/core", "/etc/x/y/z")
	f.Add("x -> y\ny -> x", "/x/f")
	f.Add("usr/local -> ../var/usrlocal\nvar/usrlocal -> ..", "/usr/local/bin/../x")
	f.Fuzz(func(t *testing.T, links, p string) {
		base := t.TempDir()
		root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
		must(t, os.MkdirAll(filepath.Join(outside, "core"), 0o755))
		must(t, os.WriteFile(filepath.Join(outside, "core/f"), []byte("outside\n"), 0o644))
		must(t, os.MkdirAll(filepath.Join(root, "var/home/core"), 0o755))
		for i, line := range strings.Split(links, "\n") {
			name, target, ok := strings.Cut(line, " -> ")
			name = filepath.Clean("/" + name)
			if !ok || i >= 16 || name == "/" || target == "" || strings.ContainsRune(target, 0) || len(target) > 512 {
				continue
			}
			// The fixture itself must stay in the root: name is cleaned under "/".
			at := filepath.Join(root, name)
			if os.MkdirAll(filepath.Dir(at), 0o755) != nil {
				continue // a link made earlier is on the way
			}
			_ = os.Symlink(target, at)
		}
		before := snapshot(t, outside)
		r, err := NewRoot(root)
		must(t, err)
		uid, gid := os.Getuid(), os.Getgid()
		_ = r.CheckPath(p)
		_ = r.WriteFile(p, []byte("in\n"), 0o644, uid, gid)
		_, _ = r.ReadFile(p)
		_, _ = r.Stat(p)
		_ = r.MkdirAll(p+"/d", 0o700, uid, gid)
		_ = r.WriteFile(p+"/d/f", []byte("in\n"), 0o644, uid, gid)
		_ = r.Remove(p + "/d/f")
		_ = r.RemoveEmptyDir(p + "/d")
		_ = r.Remove(p)
		if after := snapshot(t, outside); after != before {
			t.Fatalf("links %q, path %q: written outside the root:\nbefore:\n%s\nafter:\n%s", links, p, before, after)
		}
		if entries, _ := os.ReadDir(base); len(entries) != 2 {
			t.Fatalf("links %q, path %q: %s holds %v, want only root and outside", links, p, base, entries)
		}
	})
}
