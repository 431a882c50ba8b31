package serve

import (
	"crypto/ed25519"
	"crypto/rand"
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
// that no longer parses leaves the last good keys in force.
func TestKeyringReloads(t *testing.T) {
	alice, a := newKey(t)
	bob, b := newKey(t)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("role=admin "+a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var errs []error
	r, err := newKeyring(path, func(err error) { errs = append(errs, err) })
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
	if k, ok := r.lookup(alice.PublicKey()); !ok || k.Role != Admin {
		t.Fatalf("alice after a bad edit: %v %v", k.Role, ok)
	}
	if len(errs) == 0 {
		t.Fatal("the bad edit was not reported")
	}
}

// TestHostKey: a missing host key is generated with mode 0600 and the same key is read
// on the next start.
func TestHostKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "host_ed25519")
	first, err := HostKey(path, nil)
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
	second, err := HostKey(path, nil)
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
	if _, err := HostKey(path, func(w string) { warned = w }); err != nil || !strings.Contains(warned, "readable by others") {
		t.Fatalf("a world-readable host key: err %v, warning %q", err, warned)
	}
}
