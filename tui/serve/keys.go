package serve

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

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
lines starting with # are skipped. The file is read again when it changes.`

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
		for _, o := range options {
			name, value, ok := strings.Cut(o, "=")
			if !ok || !strings.EqualFold(name, "role") {
				continue
			}
			switch strings.Trim(value, `"`) {
			case "admin":
				k.Role = Admin
			case "read-only", "readonly":
				k.Role = ReadOnly
			default:
				return nil, fmt.Errorf("line %d: role %s: use role=admin or role=read-only", i+1, value)
			}
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// keyring is the authorized keys file, read again whenever it changes, so that adding
// or removing a key takes no restart. A file that no longer parses leaves the last good
// keys in force, and the log says why.
type keyring struct {
	path    string
	onError func(error)

	mu      sync.Mutex
	keys    []Key
	modTime time.Time
	size    int64
}

func newKeyring(path string, onError func(error)) (*keyring, error) {
	r := &keyring{path: path, onError: onError}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *keyring) reload() error {
	fi, err := os.Stat(r.path)
	if err != nil {
		return fmt.Errorf("authorized keys: %w", err)
	}
	if fi.ModTime().Equal(r.modTime) && fi.Size() == r.size && r.keys != nil {
		return nil
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		return fmt.Errorf("authorized keys: %w", err)
	}
	keys, err := ParseAuthorizedKeys(data)
	if err != nil {
		return fmt.Errorf("authorized keys %s: %w", r.path, err)
	}
	if keys == nil {
		keys = []Key{}
	}
	r.keys, r.modTime, r.size = keys, fi.ModTime(), fi.Size()
	return nil
}

// lookup returns the entry of key.
func (r *keyring) lookup(key ssh.PublicKey) (Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reload(); err != nil && r.onError != nil {
		r.onError(err)
	}
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
