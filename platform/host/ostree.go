package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The OS half of the host: kernel arguments and the OS image, through the host's own
// rpm-ostree or bootc. Like MCO's daemon, the tools run inside the host's root (chroot
// when the agent sees the host under a prefix), so they act on the host's deployments
// with the host's own binaries and configuration, never the container's.

// Tool names, as OSTree.Tools reports them.
const (
	RPMOSTree = "rpm-ostree"
	Bootc     = "bootc"
)

// toolPaths is where each tool lives on an image-based host.
var toolPaths = map[string]string{
	RPMOSTree: "/usr/bin/rpm-ostree",
	Bootc:     "/usr/bin/bootc",
}

// Runner runs the host binary name (a path inside root) with args, inside root, and
// returns its combined output. The default, ChrootRunner, runs it under chroot(root)
// unless root is "/". Tests inject one that runs a fake script found under a temporary
// root directly, without chroot (which would need a whole userland in the root).
type Runner func(ctx context.Context, root, name string, args ...string) ([]byte, error)

// ChrootRunner runs name inside root: directly when root is "/", else in a child chrooted
// to root with "/" as its working directory. Chroot needs CAP_SYS_CHROOT, which the agent's
// privileged DaemonSet pod has.
func ChrootRunner(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if root != "/" {
		// exec looks name up inside the new root, after chroot.
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if live := LiveOutput(ctx); live != nil {
		w := io.MultiWriter(&out, live)
		cmd.Stdout, cmd.Stderr = w, w
	}
	err := cmd.Run()
	return out.Bytes(), err
}

type liveOutputKey struct{}

// WithLiveOutput returns a context under which a Runner also copies the command's
// output to w as it comes, for a caller that follows a long command's progress (the
// download of an OS image). A Runner that cannot stream gives all of it at the end.
func WithLiveOutput(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, liveOutputKey{}, w)
}

// LiveOutput is the writer WithLiveOutput put on ctx, nil when none: what a Runner
// copies the output to while the command runs.
func LiveOutput(ctx context.Context) io.Writer {
	w, _ := ctx.Value(liveOutputKey{}).(io.Writer)
	return w
}

// OSTree changes the host's kernel arguments and OS image. What it can do depends on the
// tools the host has: rpm-ostree does both; bootc switches images but has no command for
// kernel arguments (an image carries them in /usr/lib/bootc/kargs.d).
type OSTree struct {
	root string
	run  Runner
	// freeze says whether syncing the boot loader's files freezes their filesystem
	// (syncFS): only on the real host; a test's temporary root shares the filesystem of
	// the machine the tests run on.
	freeze bool
}

// NewOSTree returns the OS updater of the host under root (see Root). A nil run means
// ChrootRunner, the real host's; a test's runner also keeps the boot loader's files from
// being synced by freezing their filesystem (see syncFS), which would freeze the test
// machine's.
func NewOSTree(root string, run Runner) *OSTree {
	if run == nil {
		return &OSTree{root: root, run: ChrootRunner, freeze: true}
	}
	return &OSTree{root: root, run: run}
}

// Tools lists the tools the host has, rpm-ostree first: each counts when its binary
// exists and is executable under the root.
func (o *OSTree) Tools() []string {
	var out []string
	for _, t := range []string{RPMOSTree, Bootc} {
		st, err := os.Stat(filepath.Join(o.root, toolPaths[t]))
		if err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			out = append(out, t)
		}
	}
	return out
}

func (o *OSTree) has(tool string) bool {
	for _, t := range o.Tools() {
		if t == tool {
			return true
		}
	}
	return false
}

// NoToolError says a change needs an OS tool the host does not have.
type NoToolError struct {
	Change string // "kernel arguments", "OS image"
	Need   string // what would do it
}

func (e *NoToolError) Error() string {
	return fmt.Sprintf("the config changes the %s, which needs %s on the host, and the host has neither "+
		"%s nor %s: revert the change for this pool, or run its nodes on an image-based OS (Fedora CoreOS, RHEL CoreOS, a bootc image)",
		e.Change, e.Need, toolPaths[RPMOSTree], toolPaths[Bootc])
}

// SetKernelArguments is in kargs.go, with the other ways hosts change kernel arguments.

// Rebase stages the OS image imageURL for the next boot: rpm-ostree rebase
// ostree-unverified-registry:<url> where rpm-ostree exists (MCO's way, pull secrets and
// signature policy being the host's), else bootc switch <url>.
func (o *OSTree) Rebase(ctx context.Context, imageURL string) error {
	if imageURL == "" {
		return errors.New("rebase: no OS image given")
	}
	switch {
	case o.has(RPMOSTree):
		return o.exec(ctx, toolPaths[RPMOSTree], "rebase", "--experimental", "ostree-unverified-registry:"+imageURL)
	case o.has(Bootc):
		return o.exec(ctx, toolPaths[Bootc], "switch", imageURL)
	}
	return &NoToolError{Change: "OS image", Need: "rpm-ostree or bootc"}
}

// DiscardPending drops the deployment staged for the next boot (rpm-ostree cleanup -p),
// which undoes both SetKernelArguments and Rebase before the reboot, as MCO's rollback
// does. A bootc-only host cannot drop a staged image this way: the error says so.
func (o *OSTree) DiscardPending(ctx context.Context) error {
	if !o.has(RPMOSTree) {
		return &NoToolError{Change: "staged OS deployment (to roll it back)", Need: "rpm-ostree"}
	}
	return o.exec(ctx, toolPaths[RPMOSTree], "cleanup", "-p")
}

// ExecError is a failed run of a host tool, with what it printed.
type ExecError struct {
	Command string
	Output  string
	Err     error
}

func (e *ExecError) Error() string {
	out := strings.TrimSpace(e.Output)
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	if out == "" {
		return fmt.Sprintf("%s: %v", e.Command, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.Command, e.Err, out)
}

func (e *ExecError) Unwrap() error { return e.Err }

func (o *OSTree) exec(ctx context.Context, name string, args ...string) error {
	out, err := o.run(ctx, o.root, name, args...)
	if err != nil {
		return &ExecError{Command: strings.Join(append([]string{name}, args...), " "), Output: string(out), Err: err}
	}
	return nil
}
