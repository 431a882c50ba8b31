package serve

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func newKey(t *testing.T) (gossh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey())))
}

func TestParseAuthorizedKeys(t *testing.T) {
	_, a := newKey(t)
	_, b := newKey(t)
	_, c := newKey(t)
	_, d := newKey(t)
	file := strings.Join([]string{
		"# mcotui serve keys",
		"",
		"role=admin " + a + " alice@example.com",
		`no-port-forwarding,role="read-only" ` + b + " bob",
		c + " carol",
		`role="admin" ` + d,
	}, "\n")
	keys, err := ParseAuthorizedKeys([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		role Role
		name string
	}{{Admin, "alice@example.com"}, {ReadOnly, "bob"}, {ReadOnly, "carol"}, {Admin, ""}}
	if len(keys) != len(want) {
		t.Fatalf("%d keys, want %d", len(keys), len(want))
	}
	for i, w := range want {
		if keys[i].Role != w.role || keys[i].Comment != w.name {
			t.Errorf("key %d: role %v comment %q, want %v %q", i, keys[i].Role, keys[i].Comment, w.role, w.name)
		}
	}
	if got := keys[3].Name(); !strings.HasPrefix(got, "SHA256:") {
		t.Errorf("a key without a comment is named %q, want its fingerprint", got)
	}

	for _, bad := range []string{"role=root " + a, "role=admin ssh-ed25519 not-base64"} {
		if _, err := ParseAuthorizedKeys([]byte("\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

// TestKeyringReloads: a key added to the file is let in without a restart, and a file
// that no longer parses lets no key in (fail closed) until it is fixed, with a log line.
func TestKeyringReloads(t *testing.T) {
	alice, a := newKey(t)
	bob, b := newKey(t)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("role=admin "+a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r, err := newKeyring(path, os.Getuid(), slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.lookup(bob.PublicKey()); ok {
		t.Fatal("bob is let in before he is added")
	}
	if err := os.WriteFile(path, []byte("role=admin "+a+"\nrole=read-only "+b+" bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, ok := r.lookup(bob.PublicKey()); !ok || k.Role != ReadOnly {
		t.Fatalf("bob after he is added: %v %v", k.Role, ok)
	}
	if err := os.WriteFile(path, []byte("role=superuser "+a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.lookup(alice.PublicKey()); ok {
		t.Fatal("alice is let in by a file that does not parse")
	}
	if !strings.Contains(log.String(), "authorized keys refused") || !strings.Contains(log.String(), "superuser") {
		t.Fatalf("the bad edit was not logged: %s", log.String())
	}
	if err := os.WriteFile(path, []byte("role=admin "+a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, ok := r.lookup(alice.PublicKey()); !ok || k.Role != Admin {
		t.Fatalf("alice after the file is fixed: %v %v", k.Role, ok)
	}
}

// TestFileModes: as sshd's StrictModes, a file others can write, or owned by another
// user than the server's or root, is refused with an error naming the file and the fix.
func TestFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := checkFileModes("authorized keys", path, os.Getuid()); err != nil {
		t.Fatalf("mode 0600, own file: %v", err)
	}
	for _, mode := range []os.FileMode{0o620, 0o602, 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := checkFileModes("authorized keys", path, os.Getuid())
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: %v, want a refusal saying chmod 600 %s", mode, err, path)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another owner: as root, the file is given away; otherwise the server is said
	// to run as another user than the file's (which is not root's).
	serverUID := os.Getuid() + 1
	if os.Getuid() == 0 {
		serverUID = 0
		if err := os.Chown(path, 4242, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := checkFileModes("authorized keys", path, serverUID); err == nil || !strings.Contains(err.Error(), "owned by uid") || !strings.Contains(err.Error(), path) {
		t.Errorf("a file owned by another user: %v", err)
	}
	if _, err := checkFileModes("authorized keys", dir, os.Getuid()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	// The file's directory too: one others can write could have the file replaced.
	if err := os.Chown(path, os.Getuid(), -1); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := checkFileModes("authorized keys", path, os.Getuid()); err == nil || !strings.Contains(err.Error(), "directory "+dir+" is writable by group or others") || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Errorf("a directory others can write: %v", err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := checkFileModes("authorized keys", path, os.Getuid()); err != nil {
		t.Errorf("a sticky directory, as /tmp: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestTwoRoles(t *testing.T) {
	_, a := newKey(t)
	_, err := ParseAuthorizedKeys([]byte(`role=admin,role="read-only" ` + a))
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "2 roles") {
		t.Fatalf("a line with two roles: %v", err)
	}
}

func TestDefaultHostKeyPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/mcotui/host_ed25519"},
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/mcotui/host_ed25519"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/mcotui/host_ed25519"},
	} {
		got, err := DefaultHostKeyPath(env(c.env))
		if err != nil || got != c.want {
			t.Errorf("%v: %q %v, want %q", c.env, got, err, c.want)
		}
	}
	if _, err := DefaultHostKeyPath(env(nil)); err == nil || !strings.Contains(err.Error(), "--host-key") {
		t.Errorf("no HOME: %v", err)
	}
}

// TestHostKey: a missing host key is generated with mode 0600 and the same key is read
// on the next start.
func TestHostKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "host_ed25519")
	first, err := HostKey(path, os.Getuid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("host key mode %v, want 0600", fi.Mode().Perm())
	}
	if first.PublicKey().Type() != gossh.KeyAlgoED25519 {
		t.Errorf("host key type %s", first.PublicKey().Type())
	}
	second, err := HostKey(path, os.Getuid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if gossh.FingerprintSHA256(first.PublicKey()) != gossh.FingerprintSHA256(second.PublicKey()) {
		t.Fatal("the host key changed between starts")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var warned string
	if _, err := HostKey(path, os.Getuid(), func(w string) { warned = w }); err != nil || !strings.Contains(warned, "readable by others") {
		t.Fatalf("a world-readable host key: err %v, warning %q", err, warned)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	if _, err := HostKey(path, os.Getuid(), nil); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("a group-writable host key: %v", err)
	}
}
