package controller_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestRefusesWhereMCORuns: on a cluster with MCO's daemon, Run returns at once with
// ErrMCOPresent and says what it found, a DriveSession's Drive refuses likewise; neither takes the
// Lease.
func TestRefusesWhereMCORuns(t *testing.T) {
	ctx := kubetest.Context(t)
	kubetest.InstallFakeMCO(t, env.Kube)

	err := controller.Run(ctx, controller.Config{Clients: clients(t), Namespace: leaseNamespace(t), LeaseName: "lease-mco"})
	if !errors.Is(err, controller.ErrMCOPresent) || !strings.Contains(err.Error(), "found DaemonSet openshift-machine-config-operator/machine-config-daemon") {
		t.Fatalf("Run = %v, want ErrMCOPresent naming the DaemonSet", err)
	}
	// Nor does a terminal drive a pool there.
	_, err = controller.NewDriveSession(ctx, clients(t), controller.DriveOptions{Identity: "mcotui-tui@test", Namespace: leaseNamespace(t), LeaseName: "lease-mco"}).Drive(ctx, "worker", nil)
	if err == nil || !strings.Contains(err.Error(), "found DaemonSet openshift-machine-config-operator/machine-config-daemon): it drives the rollouts there") {
		t.Errorf("Drive = %v, want a refusal naming the DaemonSet", err)
	}
	if _, err := env.Kube.CoordinationV1().Leases(leaseNamespace(t)).Get(ctx, "lease-mco", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the lease was taken: %v", err)
	}
}

// TestDriverStep drives a pool without a controller, as the TUI does: one step targets
// at most maxUnavailable nodes, a second step before they finish targets none, and the
// next ones continue where the first left off.
func TestDriverStep(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "drive", ptr.To(intstr.FromInt32(1)), false)
	mc := machineConfig(t, "00-drive", "drive", "/etc/drive", "v1")
	applyMC(t, mc)
	target := expectedRendered(t, pool, mc)
	nodes := createNodes(t, "drive", "rendered-drive-old", "", "", "")
	// What the render loop would have done.
	pool = getPool(t, "drive")
	pool.Spec.Configuration.Name = target
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	d := controller.NewDriver(clients(t), controller.DriverOptions{FieldManager: "mcotui-tui"})
	step, err := d.Step(ctx, "drive", rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(step.Targets, nodes[:1]) || step.Target != target {
		t.Fatalf("first step: targets %v to %s", step.Targets, step.Target)
	}
	if d := nodeanno.Desired(getNode(t, nodes[0])); d != target {
		t.Fatalf("node %s desiredConfig = %s", nodes[0], d)
	}
	step, err = d.Step(ctx, "drive", rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Targets) != 0 || !strings.HasPrefix(step.Wait, "waiting for capacity: maxUnavailable is 1 and 1 nodes are unavailable (drive-0)") {
		t.Fatalf("second step: targets %v, wait %q", step.Targets, step.Wait)
	}

	startFakeAgent(t, "drive", 100*time.Millisecond)
	for _, want := range nodes[1:] {
		kubetest.Eventually(t, 20*time.Second, "a step targets "+want, func() (bool, string) {
			step, err := d.Step(ctx, "drive", rollout.Options{})
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(step.Targets, []string{want}), "targets " + strings.Join(step.Targets, ",") + "; " + step.Wait
		})
	}
}

// TestLeaseHolder reads a controller's Lease while it runs and after it stops.
func TestLeaseHolder(t *testing.T) {
	ctx := kubetest.Context(t)
	r := startController(t, "lease-holder", "holder-a")
	kubetest.Eventually(t, 20*time.Second, "holder-a holds the lease", func() (bool, string) {
		holder, held, err := kube.LeaseHolder(ctx, env.Kube, leaseNamespace(t), "lease-holder", time.Now())
		return err == nil && held && holder == "holder-a", holder
	})
	r.stop(t)
	holder, held, err := kube.LeaseHolder(ctx, env.Kube, leaseNamespace(t), "lease-holder", time.Now())
	if err != nil || held {
		t.Fatalf("after stop: holder %q held %t err %v", holder, held, err)
	}
	if _, held, err := kube.LeaseHolder(ctx, env.Kube, leaseNamespace(t), "no-such-lease", time.Now()); err != nil || held {
		t.Fatalf("missing lease: held %t err %v", held, err)
	}
}

// TestDriveSessionHolderNoNamespace: the TUI's drive session says a Lease whose namespace does
// not exist cannot be taken, before the drive is confirmed, rather than "not held".
func TestDriveSessionHolderNoNamespace(t *testing.T) {
	ctx := kubetest.Context(t)
	d := controller.NewDriveSession(ctx, clients(t), controller.DriveOptions{Identity: "tui-test", Namespace: "no-such-namespace-36"})
	if _, held, err := d.Holder(ctx); err == nil || held || !strings.Contains(err.Error(), "namespace no-such-namespace-36 does not exist") {
		t.Fatalf("Holder in a missing namespace: held %t err %v", held, err)
	}
	d = controller.NewDriveSession(ctx, clients(t), controller.DriveOptions{Identity: "tui-test", Namespace: leaseNamespace(t)})
	if _, held, err := d.Holder(ctx); err != nil || held {
		t.Fatalf("Holder of a free Lease: held %t err %v", held, err)
	}
}

// TestLeadEndsWhenWorkFails: work that fails while the Lease is held ends the election
// with its error and releases the Lease at once, for another candidate to take.
func TestLeadEndsWhenWorkFails(t *testing.T) {
	ctx := kubetest.Context(t)
	boom := errors.New("boom")
	e := kube.Election{Kube: env.Kube, Namespace: leaseNamespace(t), Name: "lease-fail", Identity: "fail-a",
		LeaseDuration: time.Hour, RenewDeadline: 50 * time.Minute, RetryPeriod: 200 * time.Millisecond}
	if err := kube.Lead(ctx, e, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Lead = %v, want the work's error", err)
	}
	if holder, held, err := kube.LeaseHolder(ctx, env.Kube, e.Namespace, e.Name, time.Now()); err != nil || held {
		t.Fatalf("after the work failed: holder %q held %t err %v; want the lease released", holder, held, err)
	}
	// Another candidate takes it: with an hour-long lease, only the release lets it in
	// before the test's deadline.
	e.Identity = "fail-b"
	took := make(chan struct{})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = kube.Lead(runCtx, e, func(ctx context.Context) error {
			close(took)
			<-ctx.Done()
			return nil
		})
	}()
	select {
	case <-took:
	case <-ctx.Done():
		t.Fatal("the second candidate never took the released lease")
	}
}

// TestLeadReleasesALeaseItWonUnawares: when the context ends while client-go's write
// taking the Lease is in flight, the write can succeed on the server and be reported
// cancelled; the Lease then names this candidate though the elector never knew it led.
// Lead gives such a Lease up on its way out rather than leave it held by no one working
// until it expires (a TUI that quit right after starting a drive, then its next drive,
// refused by its own stale Lease).
func TestLeadReleasesALeaseItWonUnawares(t *testing.T) {
	ctx := kubetest.Context(t)
	ns := leaseNamespace(t)
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lease-unaware"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("unaware-a"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now},
	}
	if _, err := env.Kube.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	e := kube.Election{Kube: env.Kube, Namespace: ns, Name: "lease-unaware", Identity: "unaware-a"}
	if err := kube.Lead(ended, e, func(context.Context) error {
		t.Error("fn ran although ctx had ended")
		return nil
	}); err != nil {
		t.Fatalf("Lead = %v", err)
	}
	if holder, held, err := kube.LeaseHolder(ctx, env.Kube, ns, "lease-unaware", time.Now()); err != nil || held {
		t.Fatalf("after Lead: holder %q held %t err %v; want the Lease released", holder, held, err)
	}
}
