// Package critest runs the real parts the pinned-image tests pull through: Debian's
// containerd as the CRI server (as root, with the native snapshotter and its root,
// state and socket under a temporary folder), and an in-process registry on 127.0.0.1
// (github.com/google/go-containerregistry's pkg/registry) serving random images. A
// missing containerd fails the test with how to get it.
package critest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mcotui/mcotui/platform/host/cri"
)

// Containerd is a running containerd.
type Containerd struct {
	// Endpoint is its CRI socket, unix://...
	Endpoint string
	dir      string
	log      *bytes.Buffer
}

// StartContainerd starts containerd for the test; start starts the command (a
// kubetest.Env's StartChild, so that containerd dies with the test binary), or nil for
// cmd.Start. It returns once the CRI answers, or fails the test with containerd's log.
func StartContainerd(t testing.TB, start func(*exec.Cmd) error) *Containerd {
	t.Helper()
	bin, err := exec.LookPath("containerd")
	if err != nil {
		t.Fatalf("containerd is not installed (Debian package containerd): run hack/system-deps.sh as root, or apt-get install -y containerd")
	}
	if os.Geteuid() != 0 {
		t.Fatalf("containerd needs root: run the pinned-image tests as root (make test runs them; CI runs as root)")
	}
	// A short folder: a unix socket path has at most 108 bytes.
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &Containerd{Endpoint: "unix://" + filepath.Join(dir, "c.sock"), dir: dir, log: &bytes.Buffer{}}
	if err := os.MkdirAll(c.hostsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.overlayfs"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "c.sock"), filepath.Join(dir, "c.sock.ttrpc"), c.hostsDir())
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = c.log, c.log
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	client, err := cri.Dial(c.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// containerd starts in well under a second; a wait bounded by its exit, not a clock.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _, err := client.Runtime(ctx)
		cancel()
		if err == nil {
			return c
		}
		select {
		case <-exited:
			t.Fatalf("containerd exited: %s", c.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Containerd) hostsDir() string { return filepath.Join(c.dir, "certs.d") }

// Trust makes containerd pull from the registry at host (127.0.0.1:PORT) over plain
// HTTP; containerd reads its hosts folder on every pull.
func (c *Containerd) Trust(t testing.TB, host string) {
	t.Helper()
	d := filepath.Join(c.hostsDir(), host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host, host)
	if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Registry is an in-process registry on 127.0.0.1 that can be taken down and brought
// back on the same port, and whose blob downloads can be held.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host    string
	handler http.Handler

	mu    sync.Mutex
	srv   *http.Server
	held  map[string]chan struct{} // repository -> closed when released
	blobs map[string]int           // repository -> blob GETs served or begun
	seen  chan string              // a held repository's blob was asked for
}

// StartRegistry starts a registry for the test.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), held: map[string]chan struct{}{}, blobs: map[string]int{}, seen: make(chan string, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Host = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(func() {
		r.mu.Lock()
		for k, ch := range r.held {
			close(ch)
			delete(r.held, k)
		}
		srv := r.srv
		r.mu.Unlock()
		if srv != nil {
			_ = srv.Close()
		}
	})
	return r
}

func (r *Registry) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// repoOf is the repository of a /v2/<repo>/blobs/<digest> path, or "".
func repoOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return ""
	}
	repo, _, ok := strings.Cut(rest, "/blobs/")
	if !ok {
		return ""
	}
	return repo
}

func (r *Registry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if repo := repoOf(req.URL.Path); repo != "" && req.Method == http.MethodGet {
		r.mu.Lock()
		r.blobs[repo]++
		hold := r.held[repo]
		r.mu.Unlock()
		if hold != nil {
			select {
			case r.seen <- repo:
			default:
			}
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
	}
	r.handler.ServeHTTP(w, req)
}

// Down closes the registry's port: pulls get connection refused.
func (r *Registry) Down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up serves again on the same port.
func (r *Registry) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", r.Host)
	if err != nil {
		t.Fatalf("registry back on %s: %v", r.Host, err)
	}
	r.serve(ln)
}

// Hold makes downloads of repo's blobs wait until the returned release is called.
func (r *Registry) Hold(repo string) (release func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	r.held[repo] = ch
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.held[repo] == ch {
				delete(r.held, repo)
			}
			r.mu.Unlock()
			close(ch)
		})
	}
}

// Seen receives a held repository's name when one of its blobs is asked for.
func (r *Registry) Seen() <-chan string { return r.seen }

// BlobGets is how many blob downloads of repo were asked for.
func (r *Registry) BlobGets(repo string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobs[repo]
}

// Push makes a random image of one layer of size bytes, pushes it as repo:latest and
// returns its pull spec by digest, host/repo@sha256:....
func (r *Registry) Push(t testing.TB, repo string, size int64) string {
	t.Helper()
	img, err := random.Image(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host+"/"+repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Host + "/" + repo + "@" + d.String()
}

// Missing is a pull spec by digest of an image the registry does not have.
func (r *Registry) Missing(repo string) string {
	return r.Host + "/" + repo + "@sha256:" + strings.Repeat("0", 64)
}
