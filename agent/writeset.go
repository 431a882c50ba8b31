package agent

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ignconfig"
)

// Where systemd units and the core user's keys live on the host, as Ignition and MCO put
// them.
const (
	unitDir        = "/etc/systemd/system"
	sshKeysPath    = "/home/" + configdiff.CoreUser + "/.ssh/authorized_keys.d/ignition"
	shadowPath     = "/etc/shadow"
	unitFileMode   = 0o644
	sshKeysMode    = 0o600
	sshDirMode     = 0o700
	shadowFileMode = 0o000
)

// hostFile is one file a config puts on the host.
type hostFile struct {
	Path     string
	Data     []byte
	Mode     fs.FileMode
	UID, GID int
	// What names the config entry in messages: "file", "unit foo.service", "drop-in
	// foo.service/10-x.conf", "SSH keys of core".
	What string
}

func unitPath(name string) string           { return path.Join(unitDir, name) }
func dropinPath(unit, dropin string) string { return path.Join(unitDir, unit+".d", dropin) }

// configFile is the host file of a storage.files entry, its contents decoded within
// lim.File when decode says so (else Data is nil).
func configFile(f types.File, ids *ids, lim ignconfig.Limits, decode bool) (hostFile, error) {
	var data []byte
	if decode {
		var err error
		if data, err = ignconfig.ContentsLimit(f, lim.OrDefault().File); err != nil {
			return hostFile{}, err
		}
	}
	uid, gid, err := ids.owner(f)
	if err != nil {
		return hostFile{}, err
	}
	return hostFile{Path: f.Path, Data: data, Mode: modeOf(ignconfig.FileMode(f)), UID: uid, GID: gid, What: "file"}, nil
}

// modeOf turns an Ignition mode (POSIX bits, setuid/setgid/sticky included) into an
// fs.FileMode.
func modeOf(m int) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func masked(u *types.Unit) bool  { return u != nil && u.Mask != nil && *u.Mask }
func enabled(u *types.Unit) bool { return u != nil && u.Enabled != nil && *u.Enabled }
func disabled(u *types.Unit) bool {
	return u != nil && u.Enabled != nil && !*u.Enabled
}

// unitFile is the unit's own file, when the config gives contents and does not mask it.
func unitFile(u types.Unit) (hostFile, bool) {
	if u.Contents == nil || masked(&u) {
		return hostFile{}, false
	}
	return hostFile{Path: unitPath(u.Name), Data: []byte(*u.Contents), Mode: unitFileMode, What: "unit " + u.Name}, true
}

func dropinFile(u types.Unit, d types.Dropin) (hostFile, bool) {
	if d.Contents == nil {
		return hostFile{}, false
	}
	return hostFile{Path: dropinPath(u.Name, d.Name), Data: []byte(*d.Contents), Mode: unitFileMode,
		What: "drop-in " + u.Name + "/" + d.Name}, true
}

// sshKeysData is the authorized_keys.d/ignition file for keys, one per line as Ignition
// writes it.
func sshKeysData(keys []string) []byte {
	if len(keys) == 0 {
		return nil
	}
	return []byte(strings.Join(keys, "\n") + "\n")
}

func coreUser(cfg configdiff.Config) *types.PasswdUser {
	users := cfg.Ignition.Passwd.Users
	for i := len(users) - 1; i >= 0; i-- {
		if users[i].Name == configdiff.CoreUser {
			return &users[i]
		}
	}
	return nil
}

func coreKeys(cfg configdiff.Config) []string {
	u := coreUser(cfg)
	if u == nil {
		return nil
	}
	keys := make([]string, len(u.SSHAuthorizedKeys))
	for i, k := range u.SSHAuthorizedKeys {
		keys[i] = string(k)
	}
	return keys
}

func findUnit(cfg configdiff.Config, name string) *types.Unit {
	units := cfg.Ignition.Systemd.Units
	for i := len(units) - 1; i >= 0; i-- {
		if units[i].Name == name {
			return &units[i]
		}
	}
	return nil
}

func findFile(cfg configdiff.Config, p string) *types.File {
	files := cfg.Ignition.Storage.Files
	for i := len(files) - 1; i >= 0; i-- {
		if files[i].Path == p {
			return &files[i]
		}
	}
	return nil
}

// touchedPaths is every host path an update from old to new may write or remove, sorted:
// the paths snapshotted before the first write and checked before anything is written.
func touchedPaths(c configdiff.Changes, old, new configdiff.Config) []string {
	var ps []string
	ps = append(ps, c.Files.All()...)
	for _, uc := range c.Units {
		nu, ou := findUnit(new, uc.Name), findUnit(old, uc.Name)
		if uc.Contents || uc.Mask != nil || nu == nil || (ou != nil && ou.Contents != nil) {
			ps = append(ps, unitPath(uc.Name))
		}
		for _, d := range uc.Dropins.All() {
			ps = append(ps, dropinPath(uc.Name, d))
		}
	}
	if cu := c.CoreUser; cu != nil {
		if cu.SSHKeys != nil {
			ps = append(ps, sshKeysPath)
		}
		if cu.PasswordHash {
			ps = append(ps, shadowPath)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// checkPaths says, before anything is written, why each path the update would write
// must not be: not absolute and clean, a symbolic link, a FIFO, a device or a socket on
// the host, or a path through a link going nowhere inside the root
// (host.Root.CheckPath). A unit's own path may be a link: that is how systemd masks a
// unit, and the unit is unmasked through systemd before its file is written.
func (ap *applier) checkPaths(paths []string) []string {
	var bad []string
	for _, p := range paths {
		err := ap.root.CheckPath(p)
		if err != nil && strings.HasPrefix(p, unitDir+"/") && path.Dir(p) == unitDir && isLinkAt(err, p) {
			err = nil
		}
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	return bad
}
