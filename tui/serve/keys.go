package serve

import (
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"charm.land/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Role is what a key may do.
type Role int

// Roles. The zero value is read-only: a key the file does not mark admin acts on
// nothing.
const (
	ReadOnly Role = iota
	Admin
)

func (r Role) String() string {
	if r == Admin {
		return "admin"
	}
	return "read-only"
}

// Key is one line of the authorized keys file.
type Key struct {
	Key     gossh.PublicKey
	Role    Role
	Comment string // OpenSSH's comment: who the key belongs to, for the log
}

// Name is who the key belongs to, for the log: its comment, else its fingerprint.
func (k Key) Name() string {
	if k.Comment != "" {
		return k.Comment
	}
	return gossh.FingerprintSHA256(k.Key)
}

// AuthorizedKeysFormat documents the file, for --help.
const AuthorizedKeysFormat = `The authorized keys file has OpenSSH's authorized_keys format, one public key a line,
with a role=admin or role=read-only option in front of the key type:

  role=admin ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... alice@example.com
  role=read-only ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... bob@example.com
  ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ... carol   (no role: read-only)

An admin key gets the actions (each confirmed first); a read-only key sees everything
and can change nothing. Keys not in the file are refused. Other OpenSSH options may
stand beside role (role="admin",no-port-forwarding) and are ignored; blank lines and
lines starting with # are skipped; a line with two roles is an error.

The file is read again when it changes; a key removed from it has its open sessions
ended. Like sshd's StrictModes, a file writable by group or others, or owned by another
user than the server's (or root), is refused; so is one that no longer parses: then no
key is let in and every session is ended until it is fixed (fail closed).`

// ParseAuthorizedKeys parses an authorized keys file (see AuthorizedKeysFormat). Errors
// name the line.
func ParseAuthorizedKeys(data []byte) ([]Key, error) {
	var keys []Key
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		pub, comment, options, _, err := gossh.ParseAuthorizedKey(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		k := Key{Key: pub, Comment: comment}
		var roles []string
		for _, o := range options {
			name, value, ok := strings.Cut(o, "=")
			if !ok || !strings.EqualFold(name, "role") {
				continue
			}
			roles = append(roles, o)
			switch strings.Trim(value, `"`) {
			case "admin":
				k.Role = Admin
			case "read-only", "readonly":
				k.Role = ReadOnly
			default:
				return nil, fmt.Errorf("line %d: role %s: use role=admin or role=read-only", i+1, value)
			}
		}
		// Which of two roles wins would be a guess; the one who wrote the line
		// must say.
		if len(roles) > 1 {
			return nil, fmt.Errorf("line %d: %d roles (%s): give one", i+1, len(roles), strings.Join(roles, ", "))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// keyring is the authorized keys file, read again whenever it changes, so that adding
// or removing a key takes no restart. It fails closed: a file that no longer parses,
// is gone, or has unsafe modes lets no key in until it is fixed.
type keyring struct {
	path string
	uid  int // the server's user, who (or root) must own the file
	log  *slog.Logger

	mu         sync.Mutex
	keys       []Key // nil while the file is refused
	stat       fileStat
	generation int    // counts the changes of keys, for the watcher
	refused    string // the error that refuses the file, logged once
}

func newKeyring(path string, uid int, log *slog.Logger) (*keyring, error) {
	r := &keyring{path: path, uid: uid, log: log}
	keys, st, err := r.read()
	if err != nil {
		return nil, err
	}
	r.keys, r.stat = keys, st
	return r, nil
}

// read reads and checks the file.
func (r *keyring) read() ([]Key, fileStat, error) {
	fi, err := checkFileModes("authorized keys", r.path, r.uid)
	if err != nil {
		return nil, fileStat{}, err
	}
	st := statOf(fi)
	data, err := os.ReadFile(r.path)
	if err != nil {
		return nil, st, fmt.Errorf("authorized keys: %w", err)
	}
	keys, err := ParseAuthorizedKeys(data)
	if err != nil {
		return nil, st, fmt.Errorf("authorized keys %s: %w", r.path, err)
	}
	if keys == nil {
		keys = []Key{}
	}
	return keys, st, nil
}

// refresh reads the file again if it changed. It returns the generation of the keys,
// which changes whenever the set of keys let in may have.
func (r *keyring) refresh() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi, err := os.Stat(r.path); err == nil && r.keys != nil && statOf(fi) == r.stat {
		return r.generation
	}
	keys, st, err := r.read()
	if err != nil {
		if r.keys != nil || r.refused != err.Error() {
			r.log.Error("authorized keys refused: no key is let in, and open sessions are ended, until the file is fixed", "err", err)
		}
		if r.keys != nil {
			r.generation++
		}
		r.keys, r.stat, r.refused = nil, fileStat{}, err.Error()
		return r.generation
	}
	if r.refused != "" {
		r.log.Info("authorized keys read again", "file", r.path, "keys", len(keys))
	}
	r.keys, r.stat, r.refused = keys, st, ""
	r.generation++
	return r.generation
}

// lookup returns the entry of key, after reading the file again if it changed.
func (r *keyring) lookup(key ssh.PublicKey) (Key, bool) {
	r.refresh()
	return r.current(key)
}

// current returns the entry of key as the file last read says.
func (r *keyring) current(key ssh.PublicKey) (Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == nil {
		return Key{}, false
	}
	for _, k := range r.keys {
		if ssh.KeysEqual(k.Key, key) {
			return k, true
		}
	}
	return Key{}, false
}

// fileStat is what tells that a file changed: its content (size, times, inode, as a
// Secret volume's update swaps the file) and its modes, which decide whether it is
// trusted at all.
type fileStat struct {
	size         int64
	mtime, ctime syscall.Timespec
	ino          uint64
	mode         fs.FileMode
	uid          uint32
}

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.mtime, st.ctime, st.ino, st.uid = sys.Mtim, sys.Ctim, sys.Ino, sys.Uid
	}
	return st
}

// checkFileModes refuses a file as sshd's StrictModes does: one that others than its
// owner can write, or that is owned by someone other than the server's user or root,
// could be rewritten by them to let themselves in. It returns the file's FileInfo.
func checkFileModes(what, path string, uid int) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file (%v)", what, path, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("%s %s is writable by group or others (mode %04o), so they could change who gets in: chmod 600 %s", what, path, perm, path)
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != uid {
		return nil, fmt.Errorf("%s %s is owned by uid %d, not by the server's user (uid %d) or root: chown %d %s", what, path, sys.Uid, uid, uid, path)
	}
	if err := checkDirModes(what, filepath.Dir(path), uid); err != nil {
		return nil, err
	}
	return fi, nil
}

// checkDirModes refuses the directory of such a file as StrictModes does: one that
// others than its owner can write could have the file replaced under it, whatever the
// file's own modes. A sticky directory (/tmp) is allowed: there only the file's owner
// may rename or remove it.
func checkDirModes(what, dir string, uid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s directory: %w", what, err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s directory %s is writable by group or others (mode %04o), so they could replace the file: chmod go-w %s", what, dir, perm, dir)
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != uid {
		return fmt.Errorf("%s directory %s is owned by uid %d, not by the server's user (uid %d) or root: chown %d %s", what, dir, sys.Uid, uid, uid, dir)
	}
	return nil
}
