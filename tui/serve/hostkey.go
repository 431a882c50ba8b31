package serve

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gossh "golang.org/x/crypto/ssh"
)

// DefaultHostKeyPath is where the host key lives unless --host-key says: in the user's
// state directory, $XDG_STATE_HOME/mcotui (~/.local/state/mcotui), so that the key is
// the same whatever directory the server is started in.
func DefaultHostKeyPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) { // the XDG spec says to ignore a relative one
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return "", errors.New("no state directory for the host key: neither XDG_STATE_HOME nor HOME is an absolute path; give --host-key")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "mcotui", "host_ed25519"), nil
}

// HostKey returns the server's host key from path, generating an ed25519 key there
// (mode 0600, its folder created 0700) when there is none: a server that made a new key
// on every start would make every client warn of a changed host. A key file that
// others can write, or owned by another user than uid (or root), is refused, as sshd
// does. warn is told when an existing key file can be read by others than its owner; a
// Kubernetes Secret mounted with its default mode is, so that is a warning, not an
// error.
func HostKey(path string, uid int, warn func(string)) (gossh.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = generateHostKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("host key %s: %w", path, err)
	}
	fi, err := checkFileModes("host key", path, uid)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 && warn != nil {
		warn(fmt.Sprintf("host key %s is readable by others (mode %04o); chmod 600 %s", path, fi.Mode().Perm(), path))
	}
	signer, err := gossh.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("host key %s: %w", path, err)
	}
	return signer, nil
}

func generateHostKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := gossh.MarshalPrivateKey(priv, "mcotui serve host key")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// O_EXCL: two servers starting at once must not both write a key and each keep its
	// own.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return data, f.Close()
}
