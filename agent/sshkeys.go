package agent

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/mcotui/mcotui/core/configdiff"
)

// The core user's credentials, the one part of passwd a running node takes from a
// config: SSH keys in ~core/.ssh/authorized_keys.d/ignition (mode 0600 in a 0700
// directory, owned by core, as Ignition and MCO write it), and the password hash in the
// host's /etc/shadow.

// applyCoreUser writes the core user's keys and password hash when the update changes
// them.
func (ap *applier) applyCoreUser(p *Plan) error {
	cu := p.Changes.CoreUser
	if cu == nil {
		return nil
	}
	_, new, err := p.configs()
	if err != nil {
		return err
	}
	if cu.SSHKeys != nil {
		if err := ap.writeSSHKeys(coreKeys(new)); err != nil {
			return err
		}
	}
	if cu.PasswordHash {
		hash := ""
		if u := coreUser(new); u != nil && u.PasswordHash != nil {
			hash = *u.PasswordHash
		}
		if err := ap.setPasswordHash(hash); err != nil {
			return err
		}
	}
	return nil
}

func (ap *applier) writeSSHKeys(keys []string) error {
	if len(keys) == 0 {
		if err := ap.root.Remove(sshKeysPath); err != nil {
			return fmt.Errorf("remove the SSH keys of %s: %w", configdiff.CoreUser, err)
		}
		return nil
	}
	f, err := ap.sshKeysFile(keys)
	if err != nil {
		return err
	}
	// Both directories are core's and private: sshd's StrictModes refuses keys in a
	// directory others can write.
	for _, dir := range []string{path.Dir(path.Dir(sshKeysPath)), path.Dir(sshKeysPath)} {
		if err := ap.root.MkdirAll(dir, sshDirMode, f.UID, f.GID); err != nil {
			return fmt.Errorf("SSH keys of %s: %w", configdiff.CoreUser, err)
		}
	}
	_, err = ap.ensure(f)
	return err
}

func (ap *applier) sshKeysFile(keys []string) (hostFile, error) {
	d := &ids{root: ap.root}
	uid, gid, err := d.user(configdiff.CoreUser)
	if err != nil {
		return hostFile{}, err
	}
	return hostFile{Path: sshKeysPath, Data: sshKeysData(keys), Mode: sshKeysMode, UID: uid, GID: gid,
		What: "SSH keys of " + configdiff.CoreUser}, nil
}

// setPasswordHash replaces core's hash in the host's /etc/shadow, keeping every other
// line and field, mode and owner; an empty hash locks password login ("*").
func (ap *applier) setPasswordHash(hash string) error {
	if hash == "" {
		hash = "*"
	}
	info, err := ap.root.Stat(shadowPath)
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", configdiff.CoreUser, err)
	}
	data, err := ap.root.ReadFile(shadowPath)
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", configdiff.CoreUser, err)
	}
	lines := bytes.Split(data, []byte("\n"))
	found := false
	for i, l := range lines {
		f := strings.Split(string(l), ":")
		if len(f) > 1 && f[0] == configdiff.CoreUser {
			f[1] = hash
			lines[i] = []byte(strings.Join(f, ":"))
			found = true
		}
	}
	if !found {
		return fmt.Errorf("set the password of %s: no %s line in the host's %s", configdiff.CoreUser, configdiff.CoreUser, shadowPath)
	}
	_, err = ap.ensure(hostFile{Path: shadowPath, Data: bytes.Join(lines, []byte("\n")), Mode: info.Mode, UID: info.UID, GID: info.GID,
		What: "password of " + configdiff.CoreUser})
	return err
}
