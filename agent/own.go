package agent

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/ignconfig"
)

// ownPaths are the agent's own files on its own filesystem, links resolved: its state
// directory (the journal, snapshots and backups), the journal file, and its executable.
// A config that wrote one of them would overwrite the record of the update writing it,
// or the program doing so.
func ownPaths(stateDir, journal string) []string {
	var out []string
	for _, p := range []string{stateDir, journal} {
		if p != "" {
			out = append(out, resolved(p))
		}
	}
	if exe, err := os.Executable(); err == nil {
		out = append(out, resolved(exe))
	}
	return out
}

// resolved is p absolute with its links resolved, as far as it exists.
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// configPaths is every host path cfg puts a file at.
func configPaths(cfg configdiff.Config) []string {
	var ps []string
	for _, f := range cfg.Ignition.Storage.Files {
		ps = append(ps, f.Path)
	}
	for _, u := range cfg.Ignition.Systemd.Units {
		ps = append(ps, unitPath(u.Name))
		for _, d := range u.Dropins {
			ps = append(ps, dropinPath(u.Name, d.Name))
		}
	}
	if len(coreKeys(cfg)) > 0 {
		ps = append(ps, sshKeysPath)
	}
	return ps
}

// checkOwn says why each path of cfg that is one of the agent's own files (ownPaths)
// must not be written: named as the host sees it (the state directory under the root),
// or reached through links on the host.
func (ap *applier) checkOwn(cfg configdiff.Config) []string {
	var hostOwn []string
	for _, o := range ap.own {
		if rel, err := filepath.Rel(ap.root.Dir(), o); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			hostOwn = append(hostOwn, "/"+filepath.ToSlash(rel))
		}
	}
	var bad []string
	for _, p := range configPaths(cfg) {
		if err := ignconfig.CheckAgentPath(p, hostOwn...); err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if at, ok := ap.lands(p); ok {
			for _, o := range ap.own {
				if at == o || strings.HasPrefix(at, o+string(filepath.Separator)) {
					bad = append(bad, "path "+p+" leads, through links on the host, to "+o+", the mcotui agent's own state or binary: a config must not write the agent's own records")
					break
				}
			}
		}
	}
	return bad
}

// lands is where a write to the host path p would land on the agent's own filesystem:
// its nearest existing directory resolved inside the root, and the rest as written.
func (ap *applier) lands(p string) (string, bool) {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return "", false // checkPaths refuses it
	}
	dir, rest := path.Dir(p), path.Base(p)
	for {
		at, err := ap.root.ResolveDir(dir)
		if err == nil {
			return filepath.Join(at, filepath.FromSlash(rest)), true
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "/" {
			return "", false
		}
		rest = path.Join(path.Base(dir), rest)
		dir = path.Dir(dir)
	}
}
