package cri_test

import (
	"errors"
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
