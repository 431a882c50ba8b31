package vm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ImageKey is the guest image's version, VM_IMAGE_KEY in hack/vmimage.sh.
const ImageKey = "bookworm-3-containerd"

// GRUBImageKey is the GRUB-booted guest image's version, VM_GRUB_IMAGE_KEY in
// hack/vmimage.sh (built by hack/vmimage.sh DIR grub).
const GRUBImageKey = "bookworm-3-grub-2"

// grubPartOffset is where the GRUB image's root partition starts (GRUB_PART_OFFSET in
// hack/vmimage.sh).
const grubPartOffset = 1 << 20

// Image is one built guest image. An image without Kernel boots from its disk, through
// the boot loader on it, as a PC's firmware would; its root filesystem then starts at
// byte PartOffset of the disk.
type Image struct {
	Dir, Disk, Kernel, Initrd string
	PartOffset                int64
	// VarDir is where the guest's /var is on its root filesystem, for reading the journal
	// offline: "" is /var; an ostree guest's is its stateroot's var.
	VarDir string
}

// OSTreeImageKey is the ostree-booted guest image's version, VM_OSTREE_IMAGE_KEY in
// hack/vmimage.sh (built by hack/vmimage.sh DIR ostree).
const OSTreeImageKey = "bookworm-3-ostree-2"

// ostreeRootOffset is where the ostree image's sysroot partition starts
// (OSTREE_ROOT_OFFSET in hack/vmimage.sh: 1 MiB, then a /boot of 384 MiB).
const ostreeRootOffset = grubPartOffset + 384<<20

// FindOSTreeImage finds the ostree-booted guest image under $MCOTUI_TESTBIN (else the
// module's .testbin), or says how to build it.
func FindOSTreeImage() (Image, error) {
	dir, err := testbinDir()
	if err != nil {
		return Image{}, err
	}
	d := filepath.Join(dir, "vm-"+OSTreeImageKey)
	img := Image{Dir: d, Disk: filepath.Join(d, "disk.img"), PartOffset: ostreeRootOffset, VarDir: "/ostree/deploy/debian/var"}
	for _, f := range []string{img.Disk, filepath.Join(d, ".done")} {
		if _, err := os.Stat(f); err != nil {
			return Image{}, fmt.Errorf("the ostree-booted VM image %s is not built (%v): run `make testbin` (as root: hack/system-deps.sh, then hack/vmimage.sh .testbin ostree)", d, err)
		}
	}
	return img, nil
}

// FindGRUBImage finds the GRUB-booted guest image under $MCOTUI_TESTBIN (else the
// module's .testbin), or says how to build it.
func FindGRUBImage() (Image, error) {
	dir, err := testbinDir()
	if err != nil {
		return Image{}, err
	}
	d := filepath.Join(dir, "vm-"+GRUBImageKey)
	img := Image{Dir: d, Disk: filepath.Join(d, "disk.img"), PartOffset: grubPartOffset}
	for _, f := range []string{img.Disk, filepath.Join(d, ".done")} {
		if _, err := os.Stat(f); err != nil {
			return Image{}, fmt.Errorf("the GRUB-booted VM image %s is not built (%v): run `make testbin` (as root: hack/system-deps.sh, then hack/vmimage.sh .testbin grub)", d, err)
		}
	}
	return img, nil
}

// testbinDir is $MCOTUI_TESTBIN, else the module's .testbin.
func testbinDir() (string, error) {
	if dir := os.Getenv("MCOTUI_TESTBIN"); dir != "" {
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".testbin"), nil
}

// FindImage finds the guest image under $MCOTUI_TESTBIN (else the module's .testbin),
// or says how to build it.
func FindImage() (Image, error) {
	dir, err := testbinDir()
	if err != nil {
		return Image{}, err
	}
	d := filepath.Join(dir, "vm-"+ImageKey)
	img := Image{Dir: d, Disk: filepath.Join(d, "disk.img"), Kernel: filepath.Join(d, "vmlinuz"), Initrd: filepath.Join(d, "initrd.img")}
	for _, f := range []string{img.Disk, img.Kernel, img.Initrd, filepath.Join(d, ".done")} {
		if _, err := os.Stat(f); err != nil {
			return Image{}, fmt.Errorf("the VM image %s is not built (%v): run `make testbin` (as root: hack/system-deps.sh, then hack/vmimage.sh .testbin)", d, err)
		}
	}
	return img, nil
}

// Versions of what makes the guest a real node, as hack/testbin.sh builds them: the
// kubelet of the control plane's version, and the CNI plugins.
const (
	KubeletVersion = "v1.37.2"
	CNIVersion     = "v1.9.1"
)

// CNIPlugins are the plugins the node's pod network uses (a bridge with host-local
// addresses; the runtime sets up each pod's loopback with loopback).
var CNIPlugins = []string{"bridge", "host-local", "loopback"}

// NodeBinaries are the kubelet and the CNI plugins, built for the guest.
type NodeBinaries struct {
	Kubelet string
	// CNI is the plugins' folder.
	CNI string
}

// FindNodeBinaries finds the kubelet and the CNI plugins under $MCOTUI_TESTBIN (else the
// module's .testbin), or says how to build them.
func FindNodeBinaries() (NodeBinaries, error) {
	dir, err := testbinDir()
	if err != nil {
		return NodeBinaries{}, err
	}
	b := NodeBinaries{
		Kubelet: filepath.Join(dir, "kubelet-"+KubeletVersion, "kubelet"),
		CNI:     filepath.Join(dir, "cni-plugins-"+CNIVersion),
	}
	paths := []string{b.Kubelet}
	for _, p := range CNIPlugins {
		paths = append(paths, filepath.Join(b.CNI, p))
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			return NodeBinaries{}, fmt.Errorf("the real node's %s is not built (%v): run `make testbin` (hack/testbin.sh builds kubelet %s and the CNI plugins %s)", p, err, KubeletVersion, CNIVersion)
		}
	}
	return b, nil
}

// Containerd2Version is the containerd of a real node that pins images, as
// hack/testbin.sh builds it.
const Containerd2Version = "v2.4.2"

// Containerd2 is containerd 2.x, its runc shim and ctr, built for the guest.
type Containerd2 struct {
	Containerd, Shim, Ctr string
}

// FindContainerd2 finds containerd 2.x under $MCOTUI_TESTBIN (else the module's
// .testbin), or says how to build it.
func FindContainerd2() (Containerd2, error) {
	dir, err := testbinDir()
	if err != nil {
		return Containerd2{}, err
	}
	at := func(name string) string { return filepath.Join(dir, name+"-"+Containerd2Version, name) }
	c := Containerd2{Containerd: at("containerd"), Shim: at("containerd-shim-runc-v2"), Ctr: at("ctr")}
	for _, p := range []string{c.Containerd, c.Shim, c.Ctr} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			return Containerd2{}, fmt.Errorf("the real node's containerd %s is not built (%v): run `make testbin` (hack/testbin.sh builds it from github.com/containerd/containerd/v2)", p, err)
		}
	}
	return c, nil
}

// Tools are the host programs the test bed runs.
type Tools struct {
	QEMU, QEMUImg, Mke2fs, Debugfs string
}

// FindTools finds QEMU, qemu-img, mke2fs and debugfs, or says which Debian packages
// give them.
func FindTools() (Tools, error) {
	var t Tools
	var missing []string
	for _, x := range []struct {
		dst       *string
		name, pkg string
	}{
		{&t.QEMU, "qemu-system-x86_64", "qemu-system-x86"},
		{&t.QEMUImg, "qemu-img", "qemu-utils"},
		{&t.Mke2fs, "mke2fs", "e2fsprogs"},
		{&t.Debugfs, "debugfs", "e2fsprogs"},
	} {
		p, err := exec.LookPath(x.name)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", x.name, x.pkg))
			continue
		}
		*x.dst = p
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("missing %s: run `make testbin` as root (hack/system-deps.sh installs them)", strings.Join(missing, ", "))
	}
	return t, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD names no go.mod (%q): run the test from inside the mcotui module", gomod)
	}
	return filepath.Dir(gomod), nil
}

// BuildMcotui builds the module's main package as the guest runs it (static, no cgo)
// into a new temporary folder, with the given build tags (for example the agent's
// failpoints). The returned function removes it.
func BuildMcotui(tags ...string) (bin string, cleanup func(), err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "mcotui-vm-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("create a folder for the mcotui binary: %w", err)
	}
	bin = filepath.Join(dir, "mcotui")
	args := []string{"build", "-trimpath", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go %s . in %s: %w\n%s", strings.Join(args, " "), root, err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// forwardArg is the first argument of this test binary when QEMU runs it as the guest's
// forwarder for one connection (the second names the host's 127.0.0.1 address).
const forwardArg = "mcotui-vm-forward"

// ServeForwarder is the first call of TestMain. QEMU's guestfwd runs this test binary
// for each connection the guest opens to one of its forwarded addresses (the control
// plane's 10.0.2.100:6443, and any of Options.Forwards), with the connection on its
// stdin and stdout and the arguments forwardArg and the host's 127.0.0.1 address: then
// it copies bytes both ways and exits. Otherwise it returns at once.
func ServeForwarder() {
	if len(os.Args) != 3 || os.Args[1] != forwardArg {
		return
	}
	os.Exit(forward(os.Args[2], os.Stdin, os.Stdout))
}

func forward(addr string, in io.Reader, out io.Writer) int {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vm forwarder: %v\n", err)
		return 1
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(conn, in)
		// The guest closed its side: let the server finish what it is sending.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(out, conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return 1
	}
	// The server closed: nothing more can pass, whatever the guest still sends.
	return 0
}
