package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube"
)

// PoolDriver drives pools' rollouts with DrivePool, one at a time or several at once, on
// the controller's Lease as one identity, for as long as its context lasts: what a
// process that is not the controller (the TUI) is handed to drive a rollout.
type PoolDriver struct {
	ctx       context.Context // ends when the driver's owner does
	clients   *kube.Clients
	namespace string
	identity  string
	log       *slog.Logger
	alerts    AlertSource

	// The TUI calls Drive on a goroutine of its own, which may start after the
	// program has ended and Wait has begun: mu orders each drive's running.Add
	// before Wait's running.Wait, and closed refuses a drive that comes later, which
	// Wait would not wait for.
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// NewPoolDriver drives as identity on the Lease in namespace; "" is DefaultNamespace,
// where the controller's Lease is unless the controller was told otherwise. Drives end
// when ctx does.
func NewPoolDriver(ctx context.Context, clients *kube.Clients, namespace, identity string, log *slog.Logger) *PoolDriver {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return &PoolDriver{ctx: ctx, clients: clients, namespace: namespace, identity: identity, log: log}
}

// WithAlerts sets the Prometheus the pools' alert gates ask while the driver drives
// them (DriveOptions.Alerts); it returns d.
func (d *PoolDriver) WithAlerts(a AlertSource) *PoolDriver {
	d.alerts = a
	return d
}

// Identity is who the driver drives as, in the Lease and the nodes' managedFields.
func (d *PoolDriver) Identity() string { return d.identity }

// Lease is the namespace/name of the Lease the driver drives on.
func (d *PoolDriver) Lease() string { return d.namespace + "/" + LeaseName }

// Holder is who holds the driver's Lease now (LeaseHolder). A Lease that cannot exist,
// its namespace missing, is an error: a drive would be confirmed and then fail to take
// it. (A namespace the caller may not read is not: the drive will say.)
func (d *PoolDriver) Holder(ctx context.Context) (holder string, held bool, err error) {
	holder, held, err = LeaseHolder(ctx, d.clients.Kube, d.namespace, LeaseName, time.Now())
	if err != nil || held || holder != "" {
		return holder, held, err
	}
	if _, err := d.clients.Kube.CoreV1().Namespaces().Get(ctx, d.namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("namespace %s does not exist, so no Lease can be taken in it: install mcotui's controller there (mcotui install), or give the namespace it runs in", d.namespace)
	}
	return "", false, nil
}

// Drive drives pool with DrivePool until ctx or the driver's context ends, or the
// rollout does, passing on DrivePool's reports. After Wait it refuses to start.
func (d *PoolDriver) Drive(ctx context.Context, pool string, report func(DriveReport)) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("drive pool %s: the TUI has ended; nothing was driven", pool)
	}
	d.running.Add(1)
	d.mu.Unlock()
	defer d.running.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.ctx, cancel)()
	_, err := DrivePool(ctx, d.clients, pool, DriveOptions{
		Identity: d.identity, Namespace: d.namespace, Logger: d.log.With("drive", pool), Alerts: d.alerts,
	}, report)
	return err
}

// Wait waits until every drive has ended and released the Lease, and refuses any drive
// after it; the driver's context must have ended first.
func (d *PoolDriver) Wait() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.running.Wait()
}
