package render

import (
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"pgregory.net/rapid"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// Generators of valid Ignition configs for the property tests. Paths, unit and user
// names come from small sets so that generated configs collide, which is where merge
// order matters.

var (
	genPath     = rapid.SampledFrom([]string{"/etc/motd", "/etc/a.conf", "/etc/b/c.conf", "/var/lib/x", "/etc/sysctl.d/99.conf"})
	genUnitName = rapid.SampledFrom([]string{"a.service", "b.service", "c.timer"})
	genData     = rapid.StringMatching(`[a-z0-9]{0,12}`)     // plain in a data URL
	genWords    = rapid.StringMatching(`[a-z0-9 <&>]{0,12}`) // HTML characters, escaped in JSON
	genMode     = rapid.SampledFrom([]int{0o644, 0o600, 0o755})
	genKey      = rapid.StringMatching(`ssh-ed25519 AAAA[A-Za-z0-9]{4} [a-z]{1,6}`)
)

// drawFile draws a file at path.
func drawFile(t *rapid.T, path string) types.File {
	f := types.File{Node: types.Node{Path: path}}
	f.Overwrite = rapid.Ptr(rapid.Bool(), true).Draw(t, "overwrite")
	f.Mode = rapid.Ptr(genMode, true).Draw(t, "mode")
	// Only a file that keeps what is on disk may go without contents: Ignition
	// refuses overwrite: true without contents, and MCO's default is true.
	if f.Overwrite == nil || *f.Overwrite || rapid.Bool().Draw(t, "contents") {
		src := "data:," + genData.Draw(t, "data")
		// Gzipped contents, or plain ones with an empty or no compression: what
		// merging them in turn does to the pair is the point.
		switch rapid.IntRange(0, 3).Draw(t, "compression") {
		case 0:
			empty := ""
			f.Contents.Compression = &empty
		case 1:
			src = "data:;base64,H4sIAAAAAAAAA0vLz+cCAKhlMn4EAAAA" // gzip of "foo\n"
			gz := "gzip"
			f.Contents.Compression = &gz
		}
		f.Contents.Source = &src
	}
	if rapid.Bool().Draw(t, "owner") {
		f.User.Name = rapid.Ptr(rapid.SampledFrom([]string{"root", "core"}), false).Draw(t, "user")
	}
	return f
}

func genUnit() *rapid.Generator[types.Unit] {
	return rapid.Custom(func(t *rapid.T) types.Unit {
		u := types.Unit{Name: genUnitName.Draw(t, "unit")}
		u.Enabled = rapid.Ptr(rapid.Bool(), true).Draw(t, "enabled")
		if rapid.Bool().Draw(t, "has contents") {
			c := "[Unit]\nDescription=" + genWords.Draw(t, "description") + "\n"
			u.Contents = &c
		}
		u.Dropins = rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) types.Dropin {
			c := "[Service]\n"
			return types.Dropin{Name: rapid.SampledFrom([]string{"10.conf", "20.conf"}).Draw(t, "dropin"), Contents: &c}
		}), 0, 2, func(d types.Dropin) string { return d.Name }).Draw(t, "dropins")
		return u
	})
}

// genConfig draws a valid 3.5 config: no two files or units share a key, as Ignition's
// validation demands of a single config.
func genConfig() *rapid.Generator[types.Config] {
	return rapid.Custom(func(t *rapid.T) types.Config {
		cfg := ignconfig.Empty()
		// Files, links and directories share one key space: a path is one of them.
		for _, path := range rapid.SliceOfNDistinct(genPath, 0, 4, func(p string) string { return p }).Draw(t, "paths") {
			switch rapid.IntRange(0, 4).Draw(t, "node kind") {
			case 0:
				target := "/usr/share/" + genData.Draw(t, "target")
				cfg.Storage.Links = append(cfg.Storage.Links, types.Link{Node: types.Node{Path: path}, LinkEmbedded1: types.LinkEmbedded1{Target: &target}})
			case 1:
				cfg.Storage.Directories = append(cfg.Storage.Directories, types.Directory{Node: types.Node{Path: path}, DirectoryEmbedded1: types.DirectoryEmbedded1{Mode: rapid.Ptr(genMode, true).Draw(t, "dir mode")}})
			default:
				cfg.Storage.Files = append(cfg.Storage.Files, drawFile(t, path))
			}
		}
		cfg.Systemd.Units = rapid.SliceOfNDistinct(genUnit(), 0, 2, func(u types.Unit) string { return u.Name }).Draw(t, "units")
		if rapid.Bool().Draw(t, "user") {
			keys := rapid.SliceOfNDistinct(genKey, 1, 2, func(k string) string { return k }).Draw(t, "keys")
			u := types.PasswdUser{Name: "core"}
			for _, k := range keys {
				u.SSHAuthorizedKeys = append(u.SSHAuthorizedKeys, types.SSHAuthorizedKey(k))
			}
			cfg.Passwd.Users = []types.PasswdUser{u}
		}
		if rapid.Bool().Draw(t, "ignition kargs") {
			cfg.KernelArguments.ShouldExist = []types.KernelArgument{types.KernelArgument(rapid.SampledFrom([]string{"quiet", "nosmt"}).Draw(t, "karg"))}
		}
		if rapid.Bool().Draw(t, "timeouts") {
			cfg.Ignition.Timeouts.HTTPTotal = rapid.Ptr(rapid.IntRange(0, 100), false).Draw(t, "http total")
		}
		return cfg
	})
}
