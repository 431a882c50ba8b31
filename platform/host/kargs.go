package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Kernel arguments on every kind of systemd host. An image-based host changes them
// through its OS tool (rpm-ostree, or plain ostree); a conventional host through its
// bootloader's configuration: GRUB's on Debian and Ubuntu (a drop-in under
// /etc/default/grub.d and update-grub), grubby on RHEL-family hosts, /etc/kernel/cmdline
// and kernel-install on systemd-boot hosts. Which one a host uses is decided in one
// place, KernelArgsMethod, which the agent also publishes on its Node so that the
// rollout plan can say it before a node updates.

// KargsMethod is how a host's kernel arguments change; "" (KargsNone) is no way at all.
type KargsMethod string

const (
	KargsNone          KargsMethod = ""
	KargsRPMOSTree     KargsMethod = "rpm-ostree"
	KargsOSTree        KargsMethod = "ostree"
	KargsSystemdBoot   KargsMethod = "kernel-install"
	KargsGrubby        KargsMethod = "grubby"
	KargsGRUBDropIn    KargsMethod = "grub"
	grubDropIn                     = "/etc/default/grub.d/60-mcotui.cfg"
	kernelCmdline                  = "/etc/kernel/cmdline"
	ostreeBootedMarker             = "/run/ostree-booted"
	ostreeBin                      = "/usr/bin/ostree"
	updateGrubBin                  = "/usr/sbin/update-grub"
	kernelInstallBin               = "/usr/bin/kernel-install"
)

// grubbyPaths are where RHEL-family hosts have grubby (/usr/sbin before the /usr merge
// of the sbin directories, /usr/bin after).
var grubbyPaths = []string{"/usr/sbin/grubby", "/usr/bin/grubby"}

// loaderConfs are where systemd-boot's loader.conf lives on the ESP or XBOOTLDR
// partition, as bootctl looks for them.
var loaderConfs = []string{"/boot/loader/loader.conf", "/efi/loader/loader.conf", "/boot/efi/loader/loader.conf"}

// Describe says what a method runs, for plans and messages.
func (m KargsMethod) Describe() string {
	switch m {
	case KargsRPMOSTree:
		return "rpm-ostree kargs"
	case KargsOSTree:
		return "ostree admin kargs edit-in-place (instutil set-kargs to delete)"
	case KargsSystemdBoot:
		return kernelCmdline + " and kernel-install"
	case KargsGrubby:
		return "grubby --update-kernel=ALL"
	case KargsGRUBDropIn:
		return grubDropIn + " and update-grub"
	}
	return "none (no rpm-ostree, ostree, systemd-boot, grubby or update-grub on the host)"
}

// ParseKargsMethod is the method named s (a KargsMethod's value), or an error.
func ParseKargsMethod(s string) (KargsMethod, error) {
	switch m := KargsMethod(s); m {
	case KargsNone, KargsRPMOSTree, KargsOSTree, KargsSystemdBoot, KargsGrubby, KargsGRUBDropIn:
		return m, nil
	}
	return KargsNone, fmt.Errorf("unknown kernel-argument method %q", s)
}

// KernelArgsMethod is how this host's kernel arguments change, looked for in this order:
// rpm-ostree; plain ostree (a host booted through ostree, /run/ostree-booted, with the
// ostree binary: also a bootc host without rpm-ostree); systemd-boot (a loader.conf on
// the ESP and kernel-install); grubby; update-grub with /etc/default/grub. systemd-boot
// comes before grubby because a host may have both packages while only one bootloader
// boots it, and a loader.conf says it is systemd-boot.
func (o *OSTree) KernelArgsMethod() KargsMethod {
	switch {
	case o.has(RPMOSTree):
		return KargsRPMOSTree
	case o.exists(ostreeBootedMarker) && o.executable(ostreeBin):
		return KargsOSTree
	case o.executable(kernelInstallBin) && slices.ContainsFunc(loaderConfs, o.exists):
		return KargsSystemdBoot
	case slices.ContainsFunc(grubbyPaths, o.executable):
		return KargsGrubby
	case o.executable(updateGrubBin) && o.exists("/etc/default/grub"):
		return KargsGRUBDropIn
	}
	return KargsNone
}

func (o *OSTree) exists(p string) bool {
	_, err := os.Stat(filepath.Join(o.root, p))
	return err == nil
}

func (o *OSTree) executable(p string) bool {
	st, err := os.Stat(filepath.Join(o.root, p))
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// SetKernelArguments deletes each of remove (when present) and appends each of add (when
// missing), with the host's method (KernelArgsMethod). Deletions come before appends, so
// an argument in both lists stays, as with rpm-ostree. Every method is a set operation
// on what the host holds, so running the same change again after a crash leaves one copy
// of each argument, never two. The new arguments take effect at the next boot. Nothing
// to change is no call at all.
func (o *OSTree) SetKernelArguments(ctx context.Context, remove, add []string) error {
	if len(remove)+len(add) == 0 {
		return nil
	}
	switch m := o.KernelArgsMethod(); m {
	case KargsRPMOSTree:
		// MCO's rpm-ostree kargs --delete-if-present=... --append=..., except that
		// appending is --append-if-missing (see above).
		args := []string{"kargs"}
		for _, k := range remove {
			args = append(args, "--delete-if-present="+k)
		}
		for _, k := range add {
			args = append(args, "--append-if-missing="+k)
		}
		return o.exec(ctx, toolPaths[RPMOSTree], args...)
	case KargsOSTree:
		return o.ostreeKargs(ctx, remove, add)
	case KargsSystemdBoot:
		return o.kernelInstallKargs(ctx, remove, add)
	case KargsGrubby:
		return o.grubbyKargs(ctx, remove, add)
	case KargsGRUBDropIn:
		return o.grubDropInKargs(ctx, remove, add)
	}
	return &NoKargsMethodError{}
}

// NoKargsMethodError says a config changes kernel arguments on a host with no way to
// change them (KernelArgsMethod is KargsNone).
type NoKargsMethodError struct{}

func (e *NoKargsMethodError) Error() string {
	return "the config changes the kernel arguments, and the host has no way to change them: none of " +
		toolPaths[RPMOSTree] + ", " + ostreeBin + " (on a host booted through ostree), " + kernelInstallBin + " with systemd-boot's loader.conf, " +
		strings.Join(grubbyPaths, " or ") + ", " + updateGrubBin + " with /etc/default/grub: revert the change for this pool, or install the host's boot loader tools"
}

// EditKargs is current with each of remove deleted where present (every copy) and then
// each of add appended where missing: the set operation every method makes.
func EditKargs(current, remove, add []string) []string {
	out := slices.DeleteFunc(slices.Clone(current), func(k string) bool { return slices.Contains(remove, k) })
	for _, k := range add {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// ostreeKargs changes the kernel arguments of a plain ostree host. ostree 2022.7's
// `ostree admin kargs edit-in-place` has only --append-if-missing (it edits every
// deployment in place, staged ones too); a deletion rewrites the arguments of the
// default deployment (the one the next boot takes) with `ostree admin instutil
// set-kargs`, given the whole list worked out from its boot entry. Both are idempotent.
func (o *OSTree) ostreeKargs(ctx context.Context, remove, add []string) error {
	if len(remove) == 0 {
		args := []string{"admin", "kargs", "edit-in-place"}
		for _, k := range add {
			args = append(args, "--append-if-missing="+k)
		}
		return o.exec(ctx, ostreeBin, args...)
	}
	current, err := o.defaultOSTreeKargs()
	if err != nil {
		return err
	}
	next := EditKargs(current, remove, add)
	if slices.Equal(next, current) {
		return nil
	}
	return o.exec(ctx, ostreeBin, append([]string{"admin", "instutil", "set-kargs"}, next...)...)
}

// defaultOSTreeKargs are the options of the boot entry the next boot takes: on an ostree
// host, the entry under /boot/loader/entries with the highest version (ostree writes
// version N for the Nth deployment from the end, the default being the highest).
func (o *OSTree) defaultOSTreeKargs() ([]string, error) {
	dir := filepath.Join(o.root, "/boot/loader/entries")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read ostree's boot entries: %w", err)
	}
	best, bestVersion := "", ""
	var options string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".conf") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read boot entry %s: %w", e.Name(), err)
		}
		version, opts := blsField(string(b), "version"), blsField(string(b), "options")
		if best == "" || compareVersion(version, bestVersion) > 0 {
			best, bestVersion, options = e.Name(), version, opts
		}
	}
	if best == "" {
		return nil, fmt.Errorf("no boot entry under %s: is this host booted through ostree?", dir)
	}
	return strings.Fields(options), nil
}

// blsField is the value of key in a Boot Loader Specification entry.
func blsField(entry, key string) string {
	for _, line := range strings.Split(entry, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// compareVersion compares two boot entries' versions, numbers as numbers.
func compareVersion(a, b string) int {
	if len(a) != len(b) && strings.Trim(a, "0123456789") == "" && strings.Trim(b, "0123456789") == "" {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// grubbyKargs runs grubby over every installed kernel. grubby deletes the arguments of
// --remove-args before adding those of --args, and does not add an argument a second
// time (one with a value replaces the one with the same name).
func (o *OSTree) grubbyKargs(ctx context.Context, remove, add []string) error {
	bin := grubbyPaths[0]
	if !o.executable(bin) {
		bin = grubbyPaths[1]
	}
	args := []string{"--update-kernel=ALL"}
	if len(remove) > 0 {
		args = append(args, "--remove-args="+strings.Join(remove, " "))
	}
	if len(add) > 0 {
		args = append(args, "--args="+strings.Join(add, " "))
	}
	return o.exec(ctx, bin, args...)
}

// grubDropIn is the drop-in's first line, which carries the arguments as JSON so that
// the agent reads back exactly what it wrote, whatever quoting the shell line needs.
const grubDropInTag = "# mcotui kernel arguments: "

// grubDropInKargs keeps the config's kernel arguments in a GRUB drop-in
// (/etc/default/grub.d/60-mcotui.cfg), which appends them to GRUB_CMDLINE_LINUX, and
// regenerates grub.cfg with update-grub. The arguments the agent manages are the
// drop-in's: a deletion takes one of them out (an argument the distribution's own
// /etc/default/grub sets is not the agent's to delete). The drop-in is written
// atomically and synced before update-grub runs, and what update-grub wrote is synced
// after it, so a crash at any point leaves either the old or the new list, and the rerun
// finishes the job.
func (o *OSTree) grubDropInKargs(ctx context.Context, remove, add []string) error {
	r, err := NewRoot(o.root)
	if err != nil {
		return err
	}
	current, err := readGrubDropIn(r)
	if err != nil {
		return err
	}
	next := EditKargs(current, remove, add)
	if len(next) == 0 {
		err = r.Remove(grubDropIn)
	} else {
		err = r.WriteFile(grubDropIn, GrubDropIn(next), 0o644, 0, 0)
	}
	if err != nil {
		return fmt.Errorf("kernel arguments: %w", err)
	}
	if err := o.exec(ctx, updateGrubBin); err != nil {
		return err
	}
	return syncFS(filepath.Join(o.root, "/boot"), o.freeze)
}

// GrubDropIn is the drop-in holding args: the tag line, and a line that appends them to
// GRUB_CMDLINE_LINUX (grub-mkconfig sources the drop-ins with /bin/sh after
// /etc/default/grub).
func GrubDropIn(args []string) []byte {
	tag, _ := json.Marshal(args)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellDoubleQuoted(a)
	}
	return []byte(grubDropInTag + string(tag) + "\n" +
		"# Written by the mcotui agent from the node's MachineConfig kernelArguments; it rewrites this file.\n" +
		`GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }` + strings.Join(quoted, " ") + "\"\n")
}

// shellDoubleQuoted escapes s for the inside of a double-quoted shell word.
func shellDoubleQuoted(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s)
}

// readGrubDropIn is the list of arguments in the agent's drop-in, none when it is
// missing. A drop-in without the tag line was not written by the agent: refused, as
// the agent never overwrites what it did not write.
func readGrubDropIn(r *Root) ([]string, error) {
	b, err := r.ReadFile(grubDropIn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernel arguments: read %s: %w", grubDropIn, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	tag, ok := strings.CutPrefix(line, grubDropInTag)
	var args []string
	if !ok || json.Unmarshal([]byte(tag), &args) != nil {
		return nil, fmt.Errorf("kernel arguments: %s exists but was not written by mcotui (no %q line): move it away or merge it into /etc/default/grub", grubDropIn, strings.TrimSpace(grubDropInTag))
	}
	return args, nil
}

// kernelInstallKargs edits /etc/kernel/cmdline, the command line kernel-install gives
// every boot entry it makes on a systemd-boot host, and makes each installed kernel's
// entry again with kernel-install add. A host without the file boots with the command
// line kernel-install would take in its place, /proc/cmdline without the boot loader's
// own BOOT_IMAGE= and initrd=, which is where the edit starts then.
func (o *OSTree) kernelInstallKargs(ctx context.Context, remove, add []string) error {
	r, err := NewRoot(o.root)
	if err != nil {
		return err
	}
	b, err := r.ReadFile(kernelCmdline)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if b, err = os.ReadFile("/proc/cmdline"); err != nil {
			return fmt.Errorf("kernel arguments: no %s, and /proc/cmdline: %w", kernelCmdline, err)
		}
		b = []byte(strings.Join(slices.DeleteFunc(strings.Fields(string(b)), func(k string) bool {
			return strings.HasPrefix(k, "BOOT_IMAGE=") || strings.HasPrefix(k, "initrd=")
		}), " "))
	case err != nil:
		return fmt.Errorf("kernel arguments: read %s: %w", kernelCmdline, err)
	}
	next := EditKargs(strings.Fields(string(b)), remove, add)
	if err := r.WriteFile(kernelCmdline, []byte(strings.Join(next, " ")+"\n"), 0o644, 0, 0); err != nil {
		return fmt.Errorf("kernel arguments: %w", err)
	}
	kernels, err := filepath.Glob(filepath.Join(o.root, "/usr/lib/modules/*/vmlinuz"))
	if err != nil || len(kernels) == 0 {
		return fmt.Errorf("kernel arguments: no kernel under /usr/lib/modules/*/vmlinuz for kernel-install to make entries of")
	}
	for _, k := range kernels {
		kver := filepath.Base(filepath.Dir(k))
		if err := o.exec(ctx, kernelInstallBin, "add", kver, path.Join("/usr/lib/modules", kver, "vmlinuz")); err != nil {
			return err
		}
	}
	for _, c := range loaderConfs {
		if o.exists(c) {
			if err := syncFS(filepath.Join(o.root, filepath.Dir(filepath.Dir(c))), o.freeze); err != nil {
				return err
			}
		}
	}
	return nil
}

// Linux's FIFREEZE and FITHAW (_IOWR('X', 119, int), _IOWR('X', 120, int)), which
// golang.org/x/sys/unix does not name.
const (
	fiFreeze = 0xc0045877
	fiThaw   = 0xc0045878
)

// syncFS makes what the boot loader tools wrote under dir readable by the boot loader
// after a power cut. fsync and syncfs are not enough on a journaling filesystem: they
// put the metadata in the journal, which the kernel replays at mount but GRUB, reading
// the filesystem itself, does not; a power cut then left GRUB reading the old grub.cfg's
// freed blocks and booting nothing (TestVMExtendedKernelArgsGRUBPowerCut). Freezing the
// filesystem checkpoints its journal (ext4 and xfs write every change home); it is
// thawed at once. A filesystem that cannot be frozen (vfat, an ESP) has no journal, and
// syncfs is enough.
func syncFS(dir string, freeze bool) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if !freeze {
		return nil
	}
	switch err := unix.IoctlSetInt(fd, fiFreeze, 0); {
	case err == nil:
		if err := unix.IoctlSetInt(fd, fiThaw, 0); err != nil {
			return fmt.Errorf("thaw the filesystem of %s after checkpointing its journal: %w", dir, err)
		}
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EBUSY):
		// No journal to checkpoint, or frozen by someone else (who thaws it).
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("checkpoint the journal of the filesystem of %s (FIFREEZE needs CAP_SYS_ADMIN): %w", dir, err)
	default:
		return fmt.Errorf("checkpoint the journal of the filesystem of %s: %w", dir, err)
	}
	return nil
}
