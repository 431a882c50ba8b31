package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeRootFile(t *testing.T, root, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// logTool is a fake tool at p that logs its name and arguments to root/log.
func logTool(t *testing.T, root, p, extra string) {
	t.Helper()
	writeRootFile(t, root, p, "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_ROOT/log\"\n"+extra, 0o755)
}

func TestKernelArgsMethodDetection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]os.FileMode // path -> mode (0o755 an executable)
		want  KargsMethod
	}{
		{"nothing", nil, KargsNone},
		{"rpm-ostree wins over everything", map[string]os.FileMode{"/usr/bin/rpm-ostree": 0o755, "/run/ostree-booted": 0o644, "/usr/bin/ostree": 0o755, "/usr/sbin/update-grub": 0o755, "/etc/default/grub": 0o644}, KargsRPMOSTree},
		{"plain ostree host", map[string]os.FileMode{"/run/ostree-booted": 0o644, "/usr/bin/ostree": 0o755}, KargsOSTree},
		{"bootc host booted through ostree", map[string]os.FileMode{"/usr/bin/bootc": 0o755, "/run/ostree-booted": 0o644, "/usr/bin/ostree": 0o755}, KargsOSTree},
		{"ostree installed but not booted through it", map[string]os.FileMode{"/usr/bin/ostree": 0o755, "/usr/sbin/update-grub": 0o755, "/etc/default/grub": 0o644}, KargsGRUBDropIn},
		{"systemd-boot before grubby", map[string]os.FileMode{"/usr/bin/kernel-install": 0o755, "/efi/loader/loader.conf": 0o644, "/usr/sbin/grubby": 0o755}, KargsSystemdBoot},
		{"kernel-install without systemd-boot is GRUB's grubby", map[string]os.FileMode{"/usr/bin/kernel-install": 0o755, "/etc/kernel/cmdline": 0o644, "/usr/bin/grubby": 0o755}, KargsGrubby},
		{"Debian GRUB", map[string]os.FileMode{"/usr/sbin/update-grub": 0o755, "/etc/default/grub": 0o644}, KargsGRUBDropIn},
		{"update-grub without /etc/default/grub", map[string]os.FileMode{"/usr/sbin/update-grub": 0o755}, KargsNone},
		{"a grubby that is not executable", map[string]os.FileMode{"/usr/sbin/grubby": 0o644}, KargsNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, mode := range tc.files {
				writeRootFile(t, root, p, "#!/bin/sh\n", mode)
			}
			if got := NewOSTree(root, directRunner).KernelArgsMethod(); got != tc.want {
				t.Fatalf("KernelArgsMethod = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEditKargs(t *testing.T) {
	for _, tc := range []struct {
		current, remove, add, want []string
	}{
		{nil, nil, []string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "b"}, []string{"a"}, nil, []string{"b"}},
		{[]string{"a", "b", "a"}, []string{"a"}, []string{"c"}, []string{"b", "c"}},
		// Appending what is there already, as a rerun after a crash does: no second copy.
		{[]string{"x", "a", "b"}, []string{"old"}, []string{"a", "b"}, []string{"x", "a", "b"}},
		// In both lists: stays (deleted, then appended).
		{[]string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}},
		{nil, nil, []string{"a", "a"}, []string{"a"}},
	} {
		if got := EditKargs(tc.current, tc.remove, tc.add); !slices.Equal(got, tc.want) {
			t.Errorf("EditKargs(%q, -%q, +%q) = %q, want %q", tc.current, tc.remove, tc.add, got, tc.want)
		}
	}
}

// The drop-in, sourced by a real /bin/sh after /etc/default/grub as grub-mkconfig does,
// gives GRUB_CMDLINE_LINUX the distribution's arguments followed by the config's, with
// the characters the shell would otherwise interpret kept as written.
func TestGrubDropInIsWhatTheShellReads(t *testing.T) {
	args := []string{"nosmt", `foo="a b"`, "x=$HOME", "y=`id`", `z=\`}
	dir := t.TempDir()
	dropIn := filepath.Join(dir, "60-mcotui.cfg")
	if err := os.WriteFile(dropIn, GrubDropIn(args), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{`GRUB_CMDLINE_LINUX="console=ttyS0"`, `GRUB_CMDLINE_LINUX=""`} {
		out, err := exec.Command("/bin/sh", "-c", base+"\n. "+dropIn+"\nprintf %s \"$GRUB_CMDLINE_LINUX\"").CombinedOutput()
		if err != nil {
			t.Fatalf("sh: %v: %s", err, out)
		}
		want := strings.Join(args, " ")
		if strings.Contains(base, "ttyS0") {
			want = "console=ttyS0 " + want
		}
		if string(out) != want {
			t.Fatalf("after %s, GRUB_CMDLINE_LINUX = %q, want %q", base, out, want)
		}
	}
}

func grubHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeRootFile(t, root, "/etc/default/grub", "GRUB_CMDLINE_LINUX=\"\"\n", 0o644)
	writeRootFile(t, root, "/boot/grub/grub.cfg", "", 0o644)
	// update-grub's effect that matters here: grub.cfg made from the drop-in.
	logTool(t, root, updateGrubBin, `. "$FAKE_ROOT/etc/default/grub"
for f in "$FAKE_ROOT"/etc/default/grub.d/*.cfg; do [ -e "$f" ] && . "$f"; done
echo "linux /vmlinuz $GRUB_CMDLINE_LINUX" > "$FAKE_ROOT/boot/grub/grub.cfg"
`)
	return root
}

func readRootFile(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGRUBDropInAddRemoveAndRerun(t *testing.T) {
	root := grubHost(t)
	o := NewOSTree(root, directRunner)
	ctx := context.Background()
	if err := o.SetKernelArguments(ctx, nil, []string{"nosmt", "audit=1"}); err != nil {
		t.Fatal(err)
	}
	if got := readRootFile(t, root, "/boot/grub/grub.cfg"); got != "linux /vmlinuz nosmt audit=1\n" {
		t.Fatalf("grub.cfg after adding two: %q", got)
	}
	// The next config drops nosmt: MCO's lists are the old config's and the new one's.
	change := func() error {
		return o.SetKernelArguments(ctx, []string{"nosmt", "audit=1"}, []string{"audit=1"})
	}
	if err := change(); err != nil {
		t.Fatal(err)
	}
	// The same step again, as after a crash: the same file, the same grub.cfg.
	if err := change(); err != nil {
		t.Fatal(err)
	}
	if got := readRootFile(t, root, "/boot/grub/grub.cfg"); got != "linux /vmlinuz audit=1\n" {
		t.Fatalf("grub.cfg after removing one, twice: %q", got)
	}
	if got := readRootFile(t, root, grubDropIn); !strings.HasPrefix(got, grubDropInTag+`["audit=1"]`+"\n") {
		t.Fatalf("drop-in: %q", got)
	}
	if log := toolLog(t, root); strings.Count(log, "update-grub") != 3 {
		t.Fatalf("update-grub runs: %q", log)
	}
	// Taking every argument away removes the drop-in.
	if err := o.SetKernelArguments(ctx, []string{"audit=1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("drop-in still there: %v", err)
	}
	if got := readRootFile(t, root, "/boot/grub/grub.cfg"); got != "linux /vmlinuz \n" {
		t.Fatalf("grub.cfg with no arguments: %q", got)
	}
}

func TestGRUBDropInNotOursIsRefused(t *testing.T) {
	root := grubHost(t)
	writeRootFile(t, root, grubDropIn, "GRUB_CMDLINE_LINUX=\"mine\"\n", 0o644)
	err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), nil, []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "was not written by mcotui") {
		t.Fatalf("err = %v", err)
	}
	if got := readRootFile(t, root, grubDropIn); got != "GRUB_CMDLINE_LINUX=\"mine\"\n" {
		t.Fatalf("the administrator's drop-in changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "log")); err == nil {
		t.Fatalf("update-grub ran: %s", toolLog(t, root))
	}
}

func TestGRUBUpdateGrubFailureIsReported(t *testing.T) {
	root := grubHost(t)
	logTool(t, root, updateGrubBin, "echo 'grub-probe: error: cannot find a device for /' >&2\nexit 1\n")
	err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), nil, []string{"a"})
	var ee *ExecError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "cannot find a device") {
		t.Fatalf("err = %v", err)
	}
}

func TestGrubbyArguments(t *testing.T) {
	root := t.TempDir()
	logTool(t, root, "/usr/sbin/grubby", "")
	if err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), []string{"a", "b=1"}, []string{"c", "d=2"}); err != nil {
		t.Fatal(err)
	}
	if got, want := toolLog(t, root), "grubby --update-kernel=ALL --remove-args=a b=1 --args=c d=2\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestSystemdBootCmdline(t *testing.T) {
	root := t.TempDir()
	writeRootFile(t, root, "/efi/loader/loader.conf", "timeout 0\n", 0o644)
	writeRootFile(t, root, kernelCmdline, "root=UUID=1 rw nosmt\n", 0o644)
	writeRootFile(t, root, "/usr/lib/modules/6.1.0-1/vmlinuz", "", 0o644)
	writeRootFile(t, root, "/usr/lib/modules/6.1.0-2/vmlinuz", "", 0o644)
	logTool(t, root, kernelInstallBin, "")
	o := NewOSTree(root, directRunner)
	for range 2 { // the second run is a rerun after a crash
		if err := o.SetKernelArguments(context.Background(), []string{"nosmt"}, []string{"audit=1", "quiet"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := readRootFile(t, root, kernelCmdline); got != "root=UUID=1 rw audit=1 quiet\n" {
		t.Fatalf("%s: %q", kernelCmdline, got)
	}
	want := strings.Repeat("kernel-install add 6.1.0-1 /usr/lib/modules/6.1.0-1/vmlinuz\nkernel-install add 6.1.0-2 /usr/lib/modules/6.1.0-2/vmlinuz\n", 2)
	if got := toolLog(t, root); got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func ostreeHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeRootFile(t, root, ostreeBootedMarker, "", 0o644)
	logTool(t, root, ostreeBin, "")
	writeRootFile(t, root, "/boot/loader/entries/ostree-1-debian.conf",
		"title Debian (ostree:1)\nversion 1\nlinux /ostree/debian-1/vmlinuz\noptions root=LABEL=root rw ostree=/ostree/boot.1/debian/abc/1 old=1\n", 0o644)
	writeRootFile(t, root, "/boot/loader/entries/ostree-2-debian.conf",
		"title Debian (ostree:0)\nversion 2\nlinux /ostree/debian-2/vmlinuz\noptions root=LABEL=root rw ostree=/ostree/boot.1/debian/def/0 nosmt old=1\n", 0o644)
	return root
}

func TestOSTreeAppendsInPlace(t *testing.T) {
	root := ostreeHost(t)
	if err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), nil, []string{"a", "b=1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := toolLog(t, root), "ostree admin kargs edit-in-place --append-if-missing=a --append-if-missing=b=1\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestOSTreeDeletesThroughSetKargsOfTheDefaultDeployment(t *testing.T) {
	root := ostreeHost(t)
	if err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), []string{"nosmt", "gone"}, []string{"a", "old=1"}); err != nil {
		t.Fatal(err)
	}
	// Version 2 is the default entry: its options, nosmt deleted, a appended once.
	if got, want := toolLog(t, root), "ostree admin instutil set-kargs root=LABEL=root rw ostree=/ostree/boot.1/debian/def/0 old=1 a\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestNoKargsMethodIsRefused(t *testing.T) {
	root := t.TempDir()
	err := NewOSTree(root, directRunner).SetKernelArguments(context.Background(), nil, []string{"a"})
	var nk *NoKargsMethodError
	if !errors.As(err, &nk) || !strings.Contains(err.Error(), "update-grub with /etc/default/grub") {
		t.Fatalf("err = %v", err)
	}
}
