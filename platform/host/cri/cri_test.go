package cri_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
)

// The client against Debian's containerd, pulling from an in-process registry: the
// runtime's name, a pull, its status and size, a missing image, and a removal.
func TestClientAgainstContainerd(t *testing.T) {
	ctrd := critest.StartContainerd(t, nil)
	reg := critest.StartRegistry(t)
	ctrd.Trust(t, reg.Host)
	const size = 10 << 20
	img := reg.Push(t, "cri/one", size)

	c, err := cri.Dial(ctrd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	name, version, err := c.Runtime(ctx)
	if err != nil || name != "containerd" {
		t.Fatalf("Runtime = %q %q, %v; want containerd", name, version, err)
	}
	if _, err := c.Status(ctx, img); !errors.Is(err, cri.ErrNotFound) {
		t.Fatalf("Status before the pull = %v, want ErrNotFound", err)
	}
	start := time.Now()
	if _, err := c.Pull(ctx, img); err != nil {
		t.Fatal(err)
	}
	t.Logf("pulled %d bytes in %s", size, time.Since(start))
	st, err := c.Status(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size < size {
		t.Errorf("Status.Size = %d, want at least the layer's %d", st.Size, size)
	}
	if _, err := c.Pull(ctx, reg.Missing("cri/none")); err == nil {
		t.Error("pull of a missing image succeeded")
	}
	if err := c.Remove(ctx, img); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx, img); !errors.Is(err, cri.ErrNotFound) {
		t.Fatalf("Status after the removal = %v, want ErrNotFound", err)
	}
}

func TestDetect(t *testing.T) {
	if got, err := cri.Detect("/nonexistent", "unix:///x.sock"); err != nil || got != "unix:///x.sock" {
		t.Errorf("Detect with an endpoint = %q, %v", got, err)
	}
	if _, err := cri.Detect(t.TempDir(), ""); err == nil {
		t.Error("Detect found a socket in an empty root")
	}
}

// An agent started before the runtime: no socket under the root, then containerd's
// (a link to the test's containerd) appears, and the next call finds it, once.
func TestDetectingFindsALateRuntime(t *testing.T) {
	root := t.TempDir()
	var found []string
	d := &cri.Detecting{Root: root, Found: func(e string) { found = append(found, e) }}
	defer d.Close()
	ctx := t.Context()
	if _, _, err := d.Runtime(ctx); err == nil || !strings.Contains(err.Error(), "no container runtime socket found") {
		t.Fatalf("Runtime with no socket: %v", err)
	}
	ctrd := critest.StartContainerd(t, nil)
	sock := filepath.Join(root, cri.ContainerdSocket)
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimPrefix(ctrd.Endpoint, "unix://"), sock); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if name, _, err := d.Runtime(ctx); err != nil || name != "containerd" {
			t.Fatalf("Runtime once the socket exists: %q, %v", name, err)
		}
	}
	if want := []string{"unix://" + sock}; len(found) != 1 || found[0] != want[0] {
		t.Errorf("Found called with %v, want once with %v", found, want)
	}
}
