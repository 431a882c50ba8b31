package ignconfig

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// The default limits on what one config may put on a node. A rendered MachineConfig is
// one etcd object (1.5 MiB by default), so only compression brings a real config near
// them; they stop a small gzip stream from filling a node's disk or the agent's memory.
const (
	DefaultFileLimit  = 64 << 20
	DefaultTotalLimit = 256 << 20
)

// Limits bound the decoded size of a config's files: each one (storage.files contents
// after decompression, a unit's or drop-in's contents) and all of them together.
type Limits struct {
	File, Total int64
}

// DefaultLimits are the limits the agent applies unless told otherwise.
func DefaultLimits() Limits { return Limits{File: DefaultFileLimit, Total: DefaultTotalLimit} }

// OrDefault fills the limits left zero with the defaults.
func (l Limits) OrDefault() Limits {
	if l.File <= 0 {
		l.File = DefaultFileLimit
	}
	if l.Total <= 0 {
		l.Total = DefaultTotalLimit
	}
	return l
}

// Where systemd units live on a node; the agent writes units and drop-ins only there.
const UnitDir = "/etc/systemd/system"

// specialDirs are the host's kernel filesystems: a file there is a device, a process or
// a kernel setting, never a configuration file a MachineConfig can manage (a write to
// /dev/sda or /proc/sysrq-trigger is not a file write, and reading /dev/zero never ends).
var specialDirs = []string{"/dev", "/proc", "/sys"}

// CheckUnitName refuses a unit name that would not name a file in UnitDir: an empty
// name, ".", one with '/', "..", a control character, or a character systemd does not allow
// in unit names (letters, digits, ":-_.\@"), or longer than systemd's 255 bytes.
// Ignition checks only the suffix (.service, .timer, ...).
func CheckUnitName(name string) error {
	if err := checkFileName(name); err != nil {
		return fmt.Errorf("unit name %q %w", name, err)
	}
	for _, c := range name {
		if !isUnitNameChar(c) {
			return fmt.Errorf("unit name %q has %q, which systemd does not allow in unit names (letters, digits and \":-_.\\@\")", name, c)
		}
	}
	return nil
}

// CheckDropinName refuses a drop-in name that would not name a file in the unit's .d
// directory: empty, with '/', "..", or a control character.
func CheckDropinName(name string) error {
	if err := checkFileName(name); err != nil {
		return fmt.Errorf("drop-in name %q %w", name, err)
	}
	return nil
}

func checkFileName(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case name == ".":
		return errors.New(`is ".", a directory`)
	case len(name) > 255:
		return errors.New("is longer than 255 bytes, the longest file name")
	case strings.ContainsRune(name, '/'):
		return errors.New("has '/': it must be a file name, not a path")
	case strings.Contains(name, ".."):
		return errors.New(`has "..": it must be a file name, not a path`)
	case hasControl(name):
		return errors.New("has a control character")
	}
	return nil
}

func isUnitNameChar(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune(":-_.\\@", c)
}

// hasControl reports whether s holds a control character (C0, DEL or C1): in a path or
// a name it is a typo at best, at worst a terminal escape waiting for whoever lists it.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// CheckFilePath refuses a storage.files path the agent does not write: one with a
// control character, under /dev, /proc or /sys, or one of the agent's own files
// (CheckAgentPath).
func CheckFilePath(p string) error {
	if hasControl(p) {
		return fmt.Errorf("path %q has a control character", p)
	}
	clean := path.Clean(p)
	for _, d := range specialDirs {
		if clean == d || strings.HasPrefix(clean, d+"/") {
			return fmt.Errorf("path %s is under %s, a kernel filesystem: its entries are devices, processes and kernel settings, not files a MachineConfig manages", p, d)
		}
	}
	return CheckAgentPath(p)
}

// AgentStateDir is where the mcotui agent keeps its journal, snapshots and original
// backups on a node (its --state-dir under --root, by default).
const AgentStateDir = "/var/lib/mcotui"

// agentBinaries are where the mcotui binary is installed on a host: the image's
// entrypoint and a hand install.
var agentBinaries = []string{"/usr/bin/mcotui", "/usr/local/bin/mcotui"}

// CheckAgentPath refuses a path that is the agent's own: its state directory or anything
// in it, or its binary. A config that wrote there would overwrite the journal that
// records the update (the agent then resumes from whatever the file holds) or the
// program doing the update. own names more such paths, as one agent has them (its
// --state-dir and its executable, seen from the host's root); validate and render,
// which know no node, check the defaults only.
func CheckAgentPath(p string, own ...string) error {
	clean := path.Clean(p)
	under := func(dir string) bool { return clean == dir || strings.HasPrefix(clean, dir+"/") }
	if under(AgentStateDir) {
		return fmt.Errorf("path %s is in %s, the mcotui agent's state directory (its journal, snapshots and backups): a config must not write the agent's own records", p, AgentStateDir)
	}
	for _, b := range agentBinaries {
		if clean == b {
			return fmt.Errorf("path %s is the mcotui agent's binary: a config must not replace the program applying it", p)
		}
	}
	for _, o := range own {
		if o != "" && under(path.Clean(o)) {
			return fmt.Errorf("path %s is the mcotui agent's own %s: a config must not write the agent's own state or binary", p, o)
		}
	}
	return nil
}

// CheckFileMode refuses a storage.files mode with the setuid, setgid or sticky bit
// (above 0777), as MCO's ValidateIgnition refuses it, in its words (helpers.go
// validateIgn3FileModes, after https://bugzilla.redhat.com/show_bug.cgi?id=2038240).
// Ignition itself only warns: spec 3.5 does not apply them. Directories are not
// checked, as MCO does not check them.
func CheckFileMode(f types.File) error {
	if f.Mode == nil || *f.Mode <= 0o777 {
		return nil
	}
	return fmt.Errorf("invalid mode %#o for %s, cannot exceed %#o: MCO refuses setuid, setgid and sticky bits on files; drop them from the mode", *f.Mode, f.Path, 0o777)
}

// Refusal is one reason the agent refuses a config, at the config's field (an Ignition
// context path such as storage, files, 3, path; empty for the config as a whole).
type Refusal struct {
	Path    []any
	Message string
}

func (r Refusal) Error() string { return r.Message }

// Refusals lists everything in cfg the agent refuses beyond Ignition's own validation:
// unit and drop-in names that leave their directory, file paths with control characters
// or on kernel filesystems, file modes with setuid, setgid or sticky bits, contents that decode to more than lim.File bytes, and files
// that decode to more than lim.Total bytes together. Contents are decoded one file at a
// time and counted, never held. Zero limits are the defaults.
func Refusals(cfg types.Config, lim Limits) []Refusal {
	lim = lim.OrDefault()
	var out []Refusal
	var total int64
	for i, f := range cfg.Storage.Files {
		if err := CheckFilePath(f.Path); err != nil {
			out = append(out, Refusal{Path: []any{"storage", "files", i, "path"}, Message: err.Error()})
		}
		if err := CheckFileMode(f); err != nil {
			out = append(out, Refusal{Path: []any{"storage", "files", i, "mode"}, Message: err.Error()})
		}
		n, err := DecodedSize(f, lim.File)
		if err != nil {
			out = append(out, Refusal{Path: []any{"storage", "files", i, "contents"}, Message: err.Error()})
		}
		total += n
	}
	for i, d := range cfg.Storage.Directories {
		if hasControl(d.Path) {
			out = append(out, Refusal{Path: []any{"storage", "directories", i, "path"}, Message: fmt.Sprintf("path %q has a control character", d.Path)})
		}
	}
	for i, l := range cfg.Storage.Links {
		if hasControl(l.Path) {
			out = append(out, Refusal{Path: []any{"storage", "links", i, "path"}, Message: fmt.Sprintf("path %q has a control character", l.Path)})
		}
	}
	for i, u := range cfg.Systemd.Units {
		at := []any{"systemd", "units", i}
		if err := CheckUnitName(u.Name); err != nil {
			out = append(out, Refusal{Path: append(at, "name"), Message: err.Error()})
		}
		if u.Contents != nil {
			if n := int64(len(*u.Contents)); n > lim.File {
				out = append(out, Refusal{Path: append(at, "contents"), Message: fmt.Sprintf("unit %s: contents are more than %d bytes, the limit of one file", u.Name, lim.File)})
			} else {
				total += n
			}
		}
		for j, d := range u.Dropins {
			dat := []any{"systemd", "units", i, "dropins", j}
			if err := CheckDropinName(d.Name); err != nil {
				out = append(out, Refusal{Path: append(dat, "name"), Message: err.Error()})
			}
			if d.Contents != nil {
				if n := int64(len(*d.Contents)); n > lim.File {
					out = append(out, Refusal{Path: append(dat, "contents"), Message: fmt.Sprintf("drop-in %s/%s: contents are more than %d bytes, the limit of one file", u.Name, d.Name, lim.File)})
				} else {
					total += n
				}
			}
		}
	}
	if total > lim.Total {
		out = append(out, Refusal{Message: fmt.Sprintf("the config's files decode to more than %d bytes in all, the limit of one config (the agent's --max-config-size)", lim.Total)})
	}
	return out
}

// Refuse is Refusals as one error, nil when there is none.
func Refuse(cfg types.Config, lim Limits) error {
	rs := Refusals(cfg, lim)
	if len(rs) == 0 {
		return nil
	}
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return errors.New(strings.Join(msgs, "; "))
}
