package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ospkg"
	"github.com/mcotui/mcotui/platform/host"
)

// Validation compares what is on disk with a config: after a reboot, before an update is
// declared done (MCO's validateOnDiskState), and for the drift monitor, which checks one
// file at a time with the same code.

// Mismatch is one way the host differs from the config.
type Mismatch struct {
	Path string // the file, or the unit name for enablement and masks
	What string // how it differs, for people
}

// osImageMismatchPath is the Path of a Mismatch of the booted OS image.
const osImageMismatchPath = "spec.osImageURL"

func (m Mismatch) String() string { return m.Path + ": " + m.What }

// describeMismatches joins mismatches for a condition message or annotation.
func describeMismatches(ms []Mismatch) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, "; ")
}

// expectedFiles is every file cfg puts on the host, by path.
func (ap *applier) expectedFiles(cfg configdiff.Config) (map[string]hostFile, error) {
	d := &ids{root: ap.root}
	out := map[string]hostFile{}
	for _, f := range cfg.Ignition.Storage.Files {
		hf, err := configFile(f, d, ap.limits, true)
		if err != nil {
			return nil, err
		}
		out[hf.Path] = hf
	}
	for _, u := range cfg.Ignition.Systemd.Units {
		if f, ok := unitFile(u); ok {
			out[f.Path] = f
		}
		for _, dr := range u.Dropins {
			if f, ok := dropinFile(u, dr); ok {
				out[f.Path] = f
			}
		}
	}
	if keys := coreKeys(cfg); len(keys) > 0 {
		f, err := ap.sshKeysFile(keys)
		if err != nil {
			return nil, err
		}
		out[f.Path] = f
	}
	return out, nil
}

// checkFile compares one expected file with the host.
func (ap *applier) checkFile(f hostFile) *Mismatch {
	info, err := ap.root.Stat(f.Path)
	switch {
	case isNotExist(err):
		return &Mismatch{f.Path, "missing; the config has it"}
	case isLinkAt(err, f.Path):
		return &Mismatch{f.Path, "is a symbolic link; the config has a file"}
	case err != nil:
		return &Mismatch{f.Path, strings.TrimPrefix(err.Error(), f.Path+": ")}
	}
	// One byte more than the config's is enough to tell the contents differ and where:
	// the read is bounded by what the config holds, not by what the host holds.
	data, err := ap.readPrefix(f.Path, int64(len(f.Data))+1)
	if err != nil {
		return &Mismatch{f.Path, strings.TrimPrefix(err.Error(), f.Path+": ")}
	}
	var diffs []string
	if !bytes.Equal(data, f.Data) {
		diffs = append(diffs, describeContents(data, f.Data, info.Size))
	}
	if info.Mode != f.Mode {
		diffs = append(diffs, fmt.Sprintf("mode is %s, the config says %s", octal(info.Mode), octal(f.Mode)))
	}
	if info.UID != f.UID || info.GID != f.GID {
		diffs = append(diffs, fmt.Sprintf("owner is %d:%d, the config says %d:%d", info.UID, info.GID, f.UID, f.GID))
	}
	if len(diffs) == 0 {
		return nil
	}
	return &Mismatch{f.Path, strings.Join(diffs, ", ")}
}

// readPrefix returns the first n bytes of the regular file at p on the host.
func (ap *applier) readPrefix(p string, n int64) ([]byte, error) {
	f, _, err := ap.root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// describeContents says where two contents first differ, by line, without printing
// them (a file may hold a secret). got may be a prefix of what is on disk, size bytes.
func describeContents(got, want []byte, size int64) string {
	line := 1 + bytes.Count(got[:commonPrefix(got, want)], []byte("\n"))
	return fmt.Sprintf("contents differ from line %d (%d bytes on disk, %d in the config)", line, size, len(want))
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// octal writes a mode as chmod takes it: 0644, 4755.
func octal(m fs.FileMode) string {
	bits := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}

// validate compares the whole of cfg with the host: every file, unit file and drop-in,
// the core user's keys, and every unit's enablement and mask.
func (ap *applier) validate(ctx context.Context, cfg configdiff.Config) ([]Mismatch, error) {
	want, err := ap.expectedFiles(cfg)
	if err != nil {
		return nil, err
	}
	var out []Mismatch
	for _, p := range sortedKeys(want) {
		if m := ap.checkFile(want[p]); m != nil {
			out = append(out, *m)
		}
	}
	for _, u := range cfg.Ignition.Systemd.Units {
		if !masked(&u) && u.Enabled == nil {
			continue
		}
		state, err := ap.systemd.UnitFileState(ctx, u.Name)
		if err != nil {
			if isNotExist(err) {
				out = append(out, Mismatch{u.Name, "systemd has no unit file for it"})
				continue
			}
			return nil, err
		}
		switch {
		case masked(&u):
			if !strings.HasPrefix(state, "masked") {
				out = append(out, Mismatch{u.Name, fmt.Sprintf("is %s, the config masks it", state)})
			}
		case enabled(&u):
			if !slices.Contains([]string{"enabled", "enabled-runtime", "static", "alias", "indirect", "generated"}, state) {
				out = append(out, Mismatch{u.Name, fmt.Sprintf("is %s, the config enables it", state)})
			}
		case disabled(&u):
			if state == "enabled" || state == "enabled-runtime" {
				out = append(out, Mismatch{u.Name, fmt.Sprintf("is %s, the config disables it", state)})
			}
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateOS compares the OS the node booted with cfg, as MCO's validateOnDiskState
// does after its file checks: the booted deployment's image must be cfg's osImageURL,
// the kernel command line must carry each of cfg's kernel arguments, and the booted
// deployment must request each package of cfg's extensions. Each check runs only where
// it can hold: the image and packages on a host with rpm-ostree or bootc, the command
// line when the agent was given the file. changes is the update's: a host booted from an
// ostree remote reports no image, and is judged on it only when this update rebased it.
//
// The image is held to its digest too: the one osImageURL pins ("@sha256:..."), and
// wantDigest, the one the update staged for the reboot (Plan.OSDigest). A node that
// came back on its previous deployment (the staged one was lost in a power cut while
// ostree finalized it, or the bootloader fell back) shows another digest, and the
// mismatch names what it booted and what was expected; the update is never Done.
func (ap *applier) validateOS(ctx context.Context, cfg configdiff.Config, changes configdiff.Changes, wantDigest string) ([]Mismatch, error) {
	var out []Mismatch
	if ap.cmdline != "" && len(cfg.KernelArguments) > 0 {
		b, err := os.ReadFile(ap.cmdline)
		if err != nil {
			return nil, fmt.Errorf("read the kernel command line: %w", err)
		}
		booted := configdiff.SplitKernelArguments([]string{strings.TrimSpace(string(b))})
		var missing []string
		for _, k := range configdiff.SplitKernelArguments(cfg.KernelArguments) {
			if !slices.Contains(booted, k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			out = append(out, Mismatch{ap.cmdline, "the booted kernel command line lacks the config's kernel arguments " + strings.Join(missing, " ")})
		}
	}
	tools := ap.os.Tools()
	if len(tools) == 0 || (cfg.OSImageURL == "" && len(cfg.Extensions) == 0) {
		return out, nil
	}
	booted, _, err := ap.os.Deployments(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.OSImageURL != "" && (booted.Image != "" || changes.OSImageURL != nil) {
		if m := imageMismatch(booted, cfg.OSImageURL, wantDigest); m != "" {
			out = append(out, Mismatch{osImageMismatchPath, m})
		}
	}
	if len(cfg.Extensions) > 0 && slices.Contains(tools, host.RPMOSTree) {
		missing, err := ospkg.MissingPackages(booted.Deployment, cfg.Extensions)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			out = append(out, Mismatch{"spec.extensions", "the booted deployment lacks the packages " + strings.Join(missing, ", ")})
		}
	}
	return out, nil
}

// imageMismatch says how the booted deployment differs from the image want and the
// digest wantDigest (either may be unknown: ""), or "" when it is the one.
func imageMismatch(booted *host.Deployment, want, wantDigest string) string {
	if _, pinned, ok := strings.Cut(want, "@"); ok && strings.HasPrefix(pinned, "sha256:") && wantDigest == "" {
		wantDigest = pinned
	}
	sameImage := booted.Image == want
	sameDigest := wantDigest == "" || booted.Digest == "" || booted.Digest == wantDigest
	if sameImage && sameDigest {
		return ""
	}
	got := orNoImage(booted.Image)
	if booted.Digest != "" {
		got += " (digest " + booted.Digest + ")"
	}
	expected := want
	if wantDigest != "" && !strings.Contains(want, wantDigest) {
		expected += " (digest " + wantDigest + ")"
	}
	return fmt.Sprintf("the node booted %s, the config says %s: the node is not on the deployment the update staged "+
		"(it was lost before it was finalized, or the bootloader fell back to the previous one)", got, expected)
}

func orNoImage(s string) string {
	if s == "" {
		return "no container image (an ostree remote)"
	}
	return s
}
