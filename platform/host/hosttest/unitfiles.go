package hosttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The unit-file half of the systemd double: systemctl's enable, disable, mask, unmask and
// is-enabled, done on files under a root directory. Paths inside are host paths ("/etc/...");
// root is prepended only to touch the disk, and symbolic links are resolved inside the
// root, so an absolute link written the way systemctl writes it never leads out of it.
//
// It covers what mcotui's configs use: [Install] WantedBy=, RequiredBy=, UpheldBy=,
// Alias=, Also= and DefaultInstance=, template instances, masks as links to /dev/null or
// empty files, the persistent (/etc) and runtime (/run) configuration directories.
// Specifiers (%i, ...) in [Install] and presets are not supported.

// Search path, in systemd's order of precedence (the subset a node has).
var searchPath = []string{
	"/etc/systemd/system",
	"/run/systemd/system",
	"/usr/local/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/lib/systemd/system",
}

const (
	persistentConfig = "/etc/systemd/system"
	runtimeConfig    = "/run/systemd/system"
)

// unitFileChange is one entry of the a(sss) list systemd returns from the unit-file
// methods: "symlink" or "unlink", the link's path, and what it points to.
type unitFileChange struct {
	Type, Filename, Destination string
}

// busError is a D-Bus error reply with systemd's error name and message.
type busError struct{ name, message string }

func (e *busError) Error() string { return e.message + " (" + e.name + ")" }

func noSuchUnitFile(name string) error {
	return &busError{"org.freedesktop.systemd1.NoSuchUnit", fmt.Sprintf("Unit file %s does not exist.", name)}
}

// unitFileMasked names the mask's path, not the unit, as systemd 252 does ("Unit file
// /etc/systemd/system/foo.service is masked.", seen by the behaviour suite in the VM).
func unitFileMasked(maskPath string) error {
	return &busError{"org.freedesktop.systemd1.UnitMasked", fmt.Sprintf("Unit file %s is masked.", maskPath)}
}

func fileExists(p string) error {
	return &busError{"org.freedesktop.systemd1.UnitExists", fmt.Sprintf("File %s already exists.", p)}
}

func invalidArgs(format string, args ...any) error {
	return &busError{"org.freedesktop.DBus.Error.InvalidArgs", fmt.Sprintf(format, args...)}
}

// unitFiles is the unit-file state under one root directory.
type unitFiles struct{ root string }

// unit is what the search path says about one unit name.
type unit struct {
	name      string // as asked for
	path      string // host path of the file systemd would load (a template's, for an instance)
	masked    bool
	maskedIn  string // the configuration directory holding the mask
	aliasOf   string // set when name is a link, in a configuration directory, to another unit's file
	install   install
	notFound  bool
	reloadCmd bool // a [Service] ExecReload= is set, in the file or a drop-in
}

// install is a unit file's [Install] section.
type install struct {
	wantedBy, requiredBy, upheldBy, alias, also []string
	defaultInstance                             string
}

func (i install) hasRules() bool {
	return len(i.wantedBy)+len(i.requiredBy)+len(i.upheldBy)+len(i.alias) > 0
}

// disk turns a host path into the path under the root.
func (u *unitFiles) disk(p string) string { return filepath.Join(u.root, filepath.FromSlash(p)) }

// resolve follows links from the host path p, inside the root, to what is there in the end.
// It returns the final host path, or "/dev/null".
func (u *unitFiles) resolve(p string) (string, fs.FileInfo, error) {
	for range 32 {
		if p == "/dev/null" {
			return p, nil, nil
		}
		info, err := os.Lstat(u.disk(p))
		if err != nil {
			return "", nil, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return p, info, nil
		}
		target, err := os.Readlink(u.disk(p))
		if err != nil {
			return "", nil, err
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		p = path.Clean(target)
	}
	return "", nil, fmt.Errorf("%s: too many levels of symbolic links", p)
}

// lookup finds name on the search path the way systemd loads a unit file.
func (u *unitFiles) lookup(name string) (unit, error) {
	un := unit{name: name}
	found, err := u.find(&un, name)
	if err != nil || found || un.masked {
		return un, err
	}
	if tmpl, ok := templateOf(name); ok {
		if found, err = u.find(&un, tmpl); err != nil || found || un.masked {
			return un, err
		}
	}
	un.notFound = true
	return un, nil
}

// find looks for file (a unit name or its template) on the search path and fills un.
func (u *unitFiles) find(un *unit, file string) (bool, error) {
	for _, dir := range searchPath {
		p := path.Join(dir, file)
		final, info, err := u.resolve(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		if final == "/dev/null" || (info.Mode().IsRegular() && info.Size() == 0) {
			un.masked, un.maskedIn = true, dir
			return false, nil
		}
		if !info.Mode().IsRegular() {
			continue
		}
		if base := path.Base(final); base != file && (dir == persistentConfig || dir == runtimeConfig) {
			un.aliasOf = base
		}
		un.path = final
		if un.aliasOf == "" {
			un.path = p // systemd links to where it found the unit, not to what that links to
		}
		data, err := os.ReadFile(u.disk(final))
		if err != nil {
			return false, err
		}
		un.install, un.reloadCmd = parseUnit(data)
		if !un.reloadCmd {
			un.reloadCmd = u.dropInsSetReload(file)
		}
		return true, nil
	}
	return false, nil
}

// dropInsSetReload reports whether a drop-in (NAME.d/*.conf) on the search path sets ExecReload=.
func (u *unitFiles) dropInsSetReload(file string) bool {
	for _, dir := range searchPath {
		matches, _ := filepath.Glob(u.disk(path.Join(dir, file+".d", "*.conf")))
		for _, m := range matches {
			if data, err := os.ReadFile(m); err == nil {
				if _, reload := parseUnit(data); reload {
					return true
				}
			}
		}
	}
	return false
}

// parseUnit reads a unit file's [Install] section and whether [Service] sets ExecReload=.
func parseUnit(data []byte) (in install, execReload bool) {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	var line string
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if line == "" && (strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";")) {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line, text = "", line+text
		if strings.HasPrefix(text, "[") && strings.HasSuffix(text, "]") {
			section = text[1 : len(text)-1]
			continue
		}
		key, value, ok := strings.Cut(text, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch section {
		case "Service":
			if key == "ExecReload" {
				execReload = value != ""
			}
		case "Install":
			list := map[string]*[]string{
				"WantedBy": &in.wantedBy, "RequiredBy": &in.requiredBy, "UpheldBy": &in.upheldBy,
				"Alias": &in.alias, "Also": &in.also,
			}[key]
			switch {
			case list != nil && value == "":
				*list = nil // an empty assignment resets the list
			case list != nil:
				*list = append(*list, strings.Fields(value)...)
			case key == "DefaultInstance":
				in.defaultInstance = value
			}
		}
	}
	return in, execReload
}

// templateOf returns the template of an instance name: foo@bar.service -> foo@.service.
func templateOf(name string) (string, bool) {
	at := strings.IndexByte(name, '@')
	dot := strings.LastIndexByte(name, '.')
	if at < 0 || dot < at+2 {
		return "", false
	}
	return name[:at+1] + name[dot:], true
}

// isTemplate reports whether name is a template itself (foo@.service).
func isTemplate(name string) bool {
	at := strings.IndexByte(name, '@')
	return at >= 0 && at+1 < len(name) && name[at+1] == '.'
}

func configDir(runtime bool) string {
	if runtime {
		return runtimeConfig
	}
	return persistentConfig
}

// enable creates the links an [Install] section asks for, following Also=, as
// `systemctl enable [--runtime] [--force]` does. It reports whether any unit carried
// install information.
func (u *unitFiles) enable(names []string, runtime, force bool) (bool, []unitFileChange, error) {
	var changes []unitFileChange
	carries := false
	seen := map[string]bool{}
	var walk func(name string) error
	walk = func(name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		un, err := u.lookup(name)
		switch {
		case err != nil:
			return err
		case un.masked:
			return unitFileMasked(path.Join(un.maskedIn, name))
		case un.notFound:
			return noSuchUnitFile(name)
		}
		in := un.install
		if in.hasRules() || len(in.also) > 0 {
			carries = true
		}
		linkName := name
		if un.aliasOf != "" {
			linkName = un.aliasOf
		}
		if isTemplate(linkName) && len(in.wantedBy)+len(in.requiredBy)+len(in.upheldBy) > 0 {
			if in.defaultInstance == "" {
				return invalidArgs("Unit %s is a template without DefaultInstance=: enable one of its instances.", name)
			}
			linkName = strings.Replace(linkName, "@.", "@"+in.defaultInstance+".", 1)
		}
		dir := configDir(runtime)
		for _, dep := range []struct {
			suffix  string
			targets []string
		}{{".wants", in.wantedBy}, {".requires", in.requiredBy}, {".upholds", in.upheldBy}} {
			for _, target := range dep.targets {
				// Always forced: systemctl replaces a dependency link that points elsewhere.
				link := path.Join(dir, target+dep.suffix, linkName)
				if err := u.link(link, un.path, true, &changes); err != nil {
					return err
				}
			}
		}
		for _, alias := range in.alias {
			if err := u.link(path.Join(dir, alias), un.path, force, &changes); err != nil {
				return err
			}
		}
		for _, also := range in.also {
			if err := walk(also); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range names {
		if err := walk(name); err != nil {
			return carries, changes, err
		}
	}
	return carries, changes, nil
}

// link makes the symbolic link at host path link point to dest. An existing link to dest
// is kept; a link elsewhere is replaced with force and kept without; anything else in the
// way is an error.
func (u *unitFiles) link(link, dest string, force bool, changes *[]unitFileChange) error {
	p := u.disk(link)
	info, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case info.Mode()&fs.ModeSymlink == 0:
		return fileExists(link)
	default:
		if current, _ := os.Readlink(p); current == dest || !force {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		*changes = append(*changes, unitFileChange{"unlink", link, ""})
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(dest, p); err != nil {
		return err
	}
	*changes = append(*changes, unitFileChange{"symlink", link, dest})
	return nil
}

// disable removes every link in the configuration directory that is named after the units
// (and their Also= units and aliases) or points to a file of that name, as
// `systemctl disable [--runtime]` does. Masks are left alone, and so are masked units.
func (u *unitFiles) disable(names []string, runtime bool) ([]unitFileChange, error) {
	remove := map[string]bool{}
	var walk func(name string) error
	walk = func(name string) error {
		if remove[name] {
			return nil
		}
		un, err := u.lookup(name)
		switch {
		case err != nil:
			return err
		case un.masked:
			return nil
		case un.notFound:
			return noSuchUnitFile(name)
		}
		remove[name] = true
		for _, alias := range un.install.alias {
			remove[alias] = true
		}
		for _, also := range un.install.also {
			if err := walk(also); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range names {
		if err := walk(name); err != nil {
			return nil, err
		}
	}
	var changes []unitFileChange
	dir := configDir(runtime)
	err := filepath.WalkDir(u.disk(dir), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil || target == "/dev/null" {
			return err
		}
		if !remove[d.Name()] && !remove[path.Base(target)] {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		rel, _ := filepath.Rel(u.root, p)
		changes = append(changes, unitFileChange{"unlink", "/" + filepath.ToSlash(rel), ""})
		return nil
	})
	return changes, err
}

// mask links each name to /dev/null in the configuration directory, as `systemctl mask`
// does. A unit file of that name in that directory is in the way, even with force.
func (u *unitFiles) mask(names []string, runtime, force bool) ([]unitFileChange, error) {
	var changes []unitFileChange
	for _, name := range names {
		link := path.Join(configDir(runtime), name)
		if target, err := os.Readlink(u.disk(link)); err == nil && target == "/dev/null" {
			continue
		}
		if err := u.link(link, "/dev/null", force, &changes); err != nil {
			return changes, err
		}
		if target, _ := os.Readlink(u.disk(link)); target != "/dev/null" {
			return changes, fileExists(link) // a link elsewhere, kept for want of force
		}
	}
	return changes, nil
}

// unmask removes each name's link to /dev/null from the configuration directory.
func (u *unitFiles) unmask(names []string, runtime bool) ([]unitFileChange, error) {
	var changes []unitFileChange
	for _, name := range names {
		link := path.Join(configDir(runtime), name)
		if target, err := os.Readlink(u.disk(link)); err != nil || target != "/dev/null" {
			continue
		}
		if err := os.Remove(u.disk(link)); err != nil {
			return changes, err
		}
		changes = append(changes, unitFileChange{"unlink", link, ""})
	}
	return changes, nil
}

// state is `systemctl is-enabled`: enabled, enabled-runtime, alias, masked,
// masked-runtime, static, indirect or disabled. A unit with no file is an error.
func (u *unitFiles) state(name string) (string, error) {
	un, err := u.lookup(name)
	switch {
	case err != nil:
		return "", err
	case un.masked && un.maskedIn == runtimeConfig:
		return "masked-runtime", nil
	case un.masked:
		return "masked", nil
	case un.notFound:
		return "", &busError{"org.freedesktop.DBus.Error.FileNotFound", "No such file or directory"}
	case un.aliasOf != "":
		return "alias", nil
	}
	in := un.install
	linkName := name
	if isTemplate(name) && in.defaultInstance != "" {
		linkName = strings.Replace(name, "@.", "@"+in.defaultInstance+".", 1)
	}
	for _, dir := range []string{persistentConfig, runtimeConfig} {
		if u.linkedFrom(dir, linkName) {
			if dir == runtimeConfig {
				return "enabled-runtime", nil
			}
			return "enabled", nil
		}
	}
	switch {
	case in.hasRules() && isTemplate(name) && u.instanceLinked(name):
		return "indirect", nil // enabled through instances
	case in.hasRules():
		return "disabled", nil
	case len(in.also) > 0:
		return "indirect", nil
	}
	return "static", nil
}

// linkedFrom reports whether a .wants, .requires or .upholds directory in dir holds a
// link named name.
func (u *unitFiles) linkedFrom(dir, name string) bool {
	for _, suffix := range []string{".wants", ".requires", ".upholds"} {
		matches, _ := filepath.Glob(filepath.Join(u.disk(dir), "*"+suffix, name))
		if slices.ContainsFunc(matches, func(m string) bool {
			info, err := os.Lstat(m)
			return err == nil && info.Mode()&fs.ModeSymlink != 0
		}) {
			return true
		}
	}
	return false
}

// instanceLinked reports whether a dependency link in a configuration directory points
// to the template file name (foo@.service), that is, whether an instance of it is enabled.
func (u *unitFiles) instanceLinked(template string) bool {
	for _, dir := range []string{persistentConfig, runtimeConfig} {
		for _, suffix := range []string{".wants", ".requires", ".upholds"} {
			matches, _ := filepath.Glob(filepath.Join(u.disk(dir), "*"+suffix, "*"))
			for _, m := range matches {
				if target, err := os.Readlink(m); err == nil && path.Base(target) == template {
					return true
				}
			}
		}
	}
	return false
}
