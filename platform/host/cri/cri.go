// Package cri is the agent's access to the node's container runtime through the CRI
// gRPC API (k8s.io/cri-api): the image service to pull, inspect and remove images, and
// the runtime service's Version to learn which runtime answers (CRI-O, containerd), so
// that the agent knows whether the runtime has a pinning configuration.
package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The sockets tried, in order, when no endpoint is given: CRI-O's (the runtime MCO
// pins with), then containerd's.
const (
	CRIOSocket       = "/var/run/crio/crio.sock"
	ContainerdSocket = "/run/containerd/containerd.sock"
)

// DefaultEndpoints are the endpoints Detect tries, in order.
var DefaultEndpoints = []string{"unix://" + CRIOSocket, "unix://" + ContainerdSocket}

// maxMsgSize is the kubelet's limit for CRI messages (16 MiB): an image list of a busy
// node exceeds gRPC's default 4 MiB.
const maxMsgSize = 16 << 20

// Client talks to one CRI endpoint.
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	images   runtimeapi.ImageServiceClient
	runtime  runtimeapi.RuntimeServiceClient
}

// Dial connects to endpoint ("unix:///path" or a plain socket path). gRPC connects
// lazily: the first call reports an endpoint nobody listens on.
func Dial(endpoint string) (*Client, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("CRI endpoint %s: only unix sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: %w", endpoint, err)
	}
	return &Client{endpoint: endpoint, conn: conn, images: runtimeapi.NewImageServiceClient(conn), runtime: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

// Detect returns the endpoint to use: endpoint when given, else the first of
// DefaultEndpoints whose socket exists under root (the host's "/" as the agent sees
// it; "" is "/").
func Detect(root, endpoint string) (string, error) {
	if endpoint != "" {
		return endpoint, nil
	}
	for _, e := range DefaultEndpoints {
		if _, err := os.Stat(root + strings.TrimPrefix(e, "unix://")); err == nil {
			return "unix://" + root + strings.TrimPrefix(e, "unix://"), nil
		}
	}
	return "", fmt.Errorf("no container runtime socket found (tried %s): give --cri-endpoint", strings.Join(DefaultEndpoints, ", "))
}

// Endpoint is the endpoint the client was dialled with.
func (c *Client) Endpoint() string { return c.endpoint }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Runtime returns the runtime's name and version as it reports them ("cri-o",
// "containerd").
func (c *Client) Runtime(ctx context.Context) (name, version string, err error) {
	r, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", "", fmt.Errorf("CRI %s: version: %w", c.endpoint, err)
	}
	return r.GetRuntimeName(), r.GetRuntimeVersion(), nil
}

// Image is what the runtime knows of a pulled image.
type Image struct {
	ID          string
	RepoDigests []string
	Size        uint64
	Pinned      bool
}

// ErrNotFound says the runtime has no such image.
var ErrNotFound = errors.New("image not present in the container runtime")

// Status returns the runtime's record of image, or ErrNotFound.
func (c *Client) Status(ctx context.Context, image string) (Image, error) {
	r, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return Image{}, fmt.Errorf("CRI %s: status of image %s: %w", c.endpoint, image, err)
	}
	img := r.GetImage()
	if img == nil {
		return Image{}, fmt.Errorf("image %s: %w", image, ErrNotFound)
	}
	return Image{ID: img.GetId(), RepoDigests: img.GetRepoDigests(), Size: img.GetSize(), Pinned: img.GetPinned()}, nil
}

// Pull pulls image and returns the runtime's reference of it.
func (c *Client) Pull(ctx context.Context, image string) (string, error) {
	r, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return "", fmt.Errorf("CRI %s: pull image %s: %w", c.endpoint, image, err)
	}
	return r.GetImageRef(), nil
}

// Remove removes image from the runtime; an image already gone is not an error (the
// runtimes say so in different ways, and the CRI says removal is idempotent).
func (c *Client) Remove(ctx context.Context, image string) error {
	if _, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		return fmt.Errorf("CRI %s: remove image %s: %w", c.endpoint, image, err)
	}
	return nil
}

// FilesystemUsage returns the bytes used by the runtime's image filesystems.
func (c *Client) FilesystemUsage(ctx context.Context) (uint64, error) {
	r, err := c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return 0, fmt.Errorf("CRI %s: image filesystem info: %w", c.endpoint, err)
	}
	var used uint64
	for _, fs := range r.GetImageFilesystems() {
		used += fs.GetUsedBytes().GetValue()
	}
	return used, nil
}

// Detecting is the image service of an agent given no endpoint: it looks for the
// runtime's socket under Root (Detect) on each call until it finds one, then keeps that
// client. At boot the agent may start before the runtime has made its socket; a socket
// found once is kept (a runtime restarting makes it again at the same place, and gRPC
// reconnects).
type Detecting struct {
	// Root is the host's "/" as the agent sees it ("" is "/").
	Root string
	// Found, when set, is called once with the endpoint found.
	Found func(endpoint string)

	mu     sync.Mutex
	client *Client
}

func (d *Detecting) get() (*Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	endpoint, err := Detect(d.Root, "")
	if err != nil {
		return nil, err
	}
	c, err := Dial(endpoint)
	if err != nil {
		return nil, err
	}
	d.client = c
	if d.Found != nil {
		d.Found(endpoint)
	}
	return c, nil
}

// Runtime is Client.Runtime of the runtime found.
func (d *Detecting) Runtime(ctx context.Context) (name, version string, err error) {
	c, err := d.get()
	if err != nil {
		return "", "", err
	}
	return c.Runtime(ctx)
}

// Status is Client.Status of the runtime found.
func (d *Detecting) Status(ctx context.Context, image string) (Image, error) {
	c, err := d.get()
	if err != nil {
		return Image{}, err
	}
	return c.Status(ctx, image)
}

// Pull is Client.Pull of the runtime found.
func (d *Detecting) Pull(ctx context.Context, image string) (string, error) {
	c, err := d.get()
	if err != nil {
		return "", err
	}
	return c.Pull(ctx, image)
}

// Close closes the client of the runtime found, if any.
func (d *Detecting) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		return nil
	}
	return d.client.Close()
}

// Pin is the Pinning of the runtime found, which must be containerd (ContainerdPins).
func (d *Detecting) Pin(ctx context.Context, images, before []string, again bool) (bool, error) {
	c, err := d.get()
	if err != nil {
		return false, err
	}
	return c.Pins().Pin(ctx, images, before, again)
}
