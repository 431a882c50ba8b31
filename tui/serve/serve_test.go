package serve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/source"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// server is a running SSH server over the test control plane, with an admin and a
// read-only key in its authorized keys file.
type server struct {
	srv      *Server
	keysPath string
	log      *syncBuffer
	addr     string
	hostKey  gossh.PublicKey
	cluster  *source.Cluster
	admin    gossh.Signer
	readOnly gossh.Signer
}

// startServer starts a server; with, when given, changes its options first.
func startServer(t *testing.T, with ...func(*Options)) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err := source.New(context.Background(), env.Config, source.Options{Context: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	if err := cluster.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	s := &server{cluster: cluster, log: &syncBuffer{}}
	var adminLine, readOnlyLine string
	s.admin, adminLine = newKey(t)
	s.readOnly, readOnlyLine = newKey(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "authorized_keys")
	content := "# test keys\nrole=admin " + adminLine + " alice@example.com\nrole=read-only " + readOnlyLine + " bob@example.com\n"
	if err := os.WriteFile(keys, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s.keysPath = keys
	hostKeyPath := filepath.Join(dir, "host_ed25519")
	opts := Options{
		HostKeyPath:        hostKeyPath,
		AuthorizedKeysPath: keys,
		Subscribe: func() (model.Source, func()) {
			sub := cluster.Subscribe()
			return sub, sub.Close
		},
		Actions: func(user string) action.Actions { return source.NewActions(cluster, user) },
		Logger:  slog.New(slog.NewTextHandler(s.log, nil)),
		// Given, and read by no session unless a test sets PodReads.
		Pods:          cluster,
		DrainForecast: cluster,
	}
	for _, w := range with {
		w(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = srv
	hk, err := HostKey(hostKeyPath, os.Getuid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.hostKey = hk.PublicKey()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() {
		if err := srv.Serve(ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *server) dial(user string, key gossh.Signer) (*gossh.Client, error) {
	return gossh.Dial("tcp", s.addr, &gossh.ClientConfig{
		User:            user,
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: gossh.FixedHostKey(s.hostKey),
		Timeout:         10 * time.Second,
	})
}

// terminal is an SSH session with a pseudo-terminal, as `ssh -t` opens: what the
// server draws is collected, what the test types is sent.
type terminal struct {
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.Writer

	mu     sync.Mutex
	out    bytes.Buffer
	stderr syncBuffer

	ended   chan struct{} // closed when the session has ended
	waitErr error         // how, once ended
}

func (s *server) open(t *testing.T, user string, key gossh.Signer) *terminal {
	t.Helper()
	return s.openSize(t, user, key, 140, 40)
}

// openSize opens a session whose terminal asks for width x height cells.
func (s *server) openSize(t *testing.T, user string, key gossh.Signer, width, height int) *terminal {
	t.Helper()
	client, err := s.dial(user, key)
	if err != nil {
		t.Fatalf("%s cannot log in: %v", user, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", height, width, gossh.TerminalModes{gossh.ECHO: 0}); err != nil {
		t.Fatal(err)
	}
	tm := &terminal{client: client, sess: sess}
	if tm.stdin, err = sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := stdout.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	sess.Stderr = &tm.stderr
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	tm.ended = make(chan struct{})
	go func() {
		tm.waitErr = sess.Wait()
		close(tm.ended)
	}()
	return tm
}

func (tm *terminal) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return ansi.Strip(tm.out.String())
}

// waitFor waits until the session has drawn text. The renderer sends only the cells
// that change, so text is a single word drawn over blank cells, or a run of words
// first drawn on a fresh screen.
func (tm *terminal) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(tm.screen(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the session never showed %q; it showed:\n%s", text, tm.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTitle waits until the session has set the terminal's title to one naming where
// it is: a title is always sent whole, so it tells reliably which screen is up.
func (tm *terminal) waitTitle(t *testing.T, where string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tm.mu.Lock()
		raw := tm.out.String()
		tm.mu.Unlock()
		if strings.Contains(raw, "mcotui: "+where+" @") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never showed %q in its title", where)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tm *terminal) typ(t *testing.T, s string) {
	t.Helper()
	if _, err := tm.stdin.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// TestSSH: over a real SSH connection, an admin key gets the TUI and pauses a pool
// through its confirmation; a read-only key gets the TUI and its action key does
// nothing; an unknown key is refused at authentication. Every session shares the one
// source.
func TestSSH(t *testing.T) {
	ctx := kubetest.Context(t)
	p := clustertest.SeedPool(ctx, t, env, "tssh", 2, 1)
	s := startServer(t)
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()

	t.Run("unknown key is refused", func(t *testing.T) {
		stranger, _ := newKey(t)
		client, err := s.dial("mallory", stranger)
		if err == nil {
			client.Close()
			t.Fatal("an unknown key logged in")
		}
		if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("refused with %v", err)
		}
	})

	// Both sessions stay open together: one source serves them.
	ro := s.open(t, "bob", s.readOnly)
	admin := s.open(t, "alice", s.admin)
	ro.waitFor(t, "tssh-0")
	admin.waitFor(t, "tssh-0")
	if n := s.cluster.Subscribers(); n != 2 {
		t.Errorf("%d subscriptions with two sessions open, want 2 on one source", n)
	}

	t.Run("read-only key cannot act", func(t *testing.T) {
		before, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ro.waitFor(t, "read-only")
		ro.typ(t, ":pool "+p.Name+"\r")
		ro.waitTitle(t, "nodes of pool "+p.Name)
		// Each action key with what would confirm it; y, where nothing asks to confirm,
		// opens the YAML (a read), which q closes (keys arrive in order).
		ro.typ(t, "pyq")
		ro.typ(t, "Ryq")
		ro.typ(t, "?")
		ro.waitTitle(t, "help")
		if strings.Contains(ro.screen(), "confirm") {
			t.Error("a read-only session was asked to confirm an action")
		}
		after, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("a read-only session changed the pool: paused %v", after.Spec.Paused)
		}
	})

	t.Run("admin key acts", func(t *testing.T) {
		admin.waitFor(t, "mcotui-managed")
		if strings.Contains(admin.screen(), "read-only") {
			t.Error("an admin session says read-only")
		}
		admin.typ(t, ":pool "+p.Name+"\r")
		admin.waitTitle(t, "nodes of pool "+p.Name)
		admin.typ(t, "p")
		admin.waitTitle(t, "Pause pool "+p.Name)
		admin.waitFor(t, "confirm")
		admin.typ(t, "y")
		clustertest.Eventually(ctx, t, "pool paused over SSH", func(ctx context.Context) (bool, error) {
			got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Spec.Paused, err
		})
		// The first q widens the grid back to every pool (k9s's q steps back); the
		// second, at the top, quits.
		admin.typ(t, "qq")
		if err := admin.waitEnd(ctx, t); err != nil {
			t.Errorf("the session ended with %v", err)
		}
	})

	t.Run("sessions release their subscriptions", func(t *testing.T) {
		// The admin quit; the read-only user hangs up.
		if err := ro.client.Close(); err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(ctx, t, "both subscriptions closed", func(context.Context) (bool, error) {
			return s.cluster.Subscribers() == 0, nil
		})
	})
}
