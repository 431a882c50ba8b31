package controller_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// drive runs a DriveSession's Drive with quick timing on a Lease of the test's own, collecting its
// reports.
type drive struct {
	mu      sync.Mutex
	reports []controller.DriveReport
}

func (d *drive) run(ctx context.Context, t *testing.T, pool, lease, identity string) (controller.DriveEnd, error) {
	session := controller.NewDriveSession(ctx, clients(t), controller.DriveOptions{
		Identity: identity, Namespace: leaseNamespace(t), LeaseName: lease,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		Interval: 100 * time.Millisecond, Logger: testLogger(t).With("driver", identity),
	})
	return session.Drive(ctx, pool, func(r controller.DriveReport) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.reports = append(d.reports, r)
	})
}

func (d *drive) targeted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.reports {
		out = append(out, r.Step.Targets...)
	}
	return out
}

func (d *drive) last() controller.DriveReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.reports) == 0 {
		return controller.DriveReport{}
	}
	return d.reports[len(d.reports)-1]
}

// TestDrive drives a pool of four nodes to its rendered config with no controller,
// as the TUI and `rollout --wait` do: never more than maxUnavailable nodes unavailable,
// nodes waiting for the target tainted UpdateInProgress and untainted once targeted,
// the pool's status Updated at the end, and the Lease released for a controller that
// starts later.
func TestDrive(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "dp", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-dp", "dp", "/etc/dp", "v1")
	applyMC(t, v1)
	nodes := createNodes(t, "dp", "rendered-dp-old", "", "", "", "")
	startFakeAgent(t, "dp", 500*time.Millisecond)
	rec := recordNodes(t, "dp")
	target := expectedRendered(t, pool, v1)
	rec.expect(target)
	controllertest.RenderByHand(t, env.MachineConfig, pool.Name, v1)

	var d drive
	end, err := d.run(ctx, t, "dp", "lease-dp", "mcotui-tui@test")
	if err != nil {
		t.Fatal(err)
	}
	if end != controller.DriveUpdated {
		t.Fatalf("the drive ended %q, want %q; last report %+v", end, controller.DriveUpdated, d.last())
	}
	if last := d.last(); last.End != controller.DriveUpdated || last.Message != "pool dp is updated: all 4 nodes run "+target {
		t.Errorf("last report %+v", last)
	}
	if got := d.targeted(); !slices.Equal(got, nodes) {
		t.Errorf("steps targeted %v, want each node once, in order: %v", got, nodes)
	}
	maxSeen, at, _, _ := rec.report()
	if maxSeen > 2 {
		t.Errorf("%d nodes were unavailable at once (%s); maxUnavailable is 2", maxSeen, at)
	}
	// The first step's two nodes, targeted in the sync that saw the target, did not
	// wait: their target's patch carries their final taints.
	if got, waited := rec.taintedNodes(), skipFirst(d.targeted(), 2); !isSubset(waited, got) {
		t.Errorf("nodes tainted while they waited for the target: %v, want all of %v", got, waited)
	}
	for _, name := range nodes {
		n := getNode(t, name)
		if !rollout.DoneAt(n, target) || rollout.HasUpdateInProgressTaint(n) {
			t.Errorf("node %s: current %s state %s taints %v; want Done at %s, untainted", name, nodeanno.Current(n), nodeanno.State(n), n.Spec.Taints, target)
		}
	}
	p := getPool(t, "dp")
	if c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated); c == nil || c.Status != corev1.ConditionTrue || p.Status.UpdatedMachineCount != 4 {
		t.Errorf("pool status after driving: %s", condString(p))
	}
	if holder, held, err := kube.LeaseHolder(ctx, env.Kube, leaseNamespace(t), "lease-dp", time.Now()); err != nil || held {
		t.Errorf("after driving: lease holder %q held %t err %v; want it released", holder, held, err)
	}
	// A controller started now takes the released Lease over.
	startController(t, "lease-dp", "dp-controller")
	kubetest.Eventually(t, 20*time.Second, "the controller takes the lease", func() (bool, string) {
		holder, held, err := kube.LeaseHolder(ctx, env.Kube, leaseNamespace(t), "lease-dp", time.Now())
		return err == nil && held && holder == "dp-controller", holder
	})
}

// TestDriveLeavesAHeldPoolAlone: while a controller holds the Lease, the drive
// refuses, names the holder and writes nothing: a pool whose nodes need an update keeps
// its nodes' desired configs, their taints and its status.
func TestDriveLeavesAHeldPoolAlone(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "dph", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-dph", "dph", "/etc/dph", "v1")
	applyMC(t, v1)
	nodes := createNodes(t, "dph", "rendered-dph-old", "", "")
	target := controllertest.RenderByHand(t, env.MachineConfig, pool.Name, v1)

	// The Lease held as a controller holds it (kube.Lead), with none of the
	// controller's loops running: anything written to the pool below is the drive's.
	leadCtx, stopLeading := context.WithCancel(context.Background())
	leading, led := make(chan struct{}), make(chan error, 1)
	go func() {
		led <- kube.Lead(leadCtx, kube.Election{
			Kube: env.Kube, Namespace: leaseNamespace(t), Name: "lease-dph", Identity: "held-controller",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		}, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			return nil
		})
	}()
	defer func() {
		stopLeading()
		if err := <-led; err != nil {
			t.Errorf("holding the lease: %v", err)
		}
	}()
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("held-controller never took the lease lease-dph")
	}

	type nodeState struct {
		desired string
		taints  []corev1.Taint
	}
	before := map[string]nodeState{}
	for _, name := range nodes {
		n := getNode(t, name)
		if nodeanno.Desired(n) == target {
			t.Fatalf("node %s already has the target %s: the test would not see the drive target it", name, target)
		}
		before[name] = nodeState{nodeanno.Desired(n), n.Spec.Taints}
	}
	poolBefore := getPool(t, "dph")

	var d drive
	_, err := d.run(ctx, t, "dph", "lease-dph", "mcotui-tui@test")
	if !errors.Is(err, controller.ErrLeaseHeld) || !strings.Contains(err.Error(), "held-controller") {
		t.Fatalf("the drive = %v, want ErrLeaseHeld naming held-controller", err)
	}
	if len(d.reports) != 0 {
		t.Errorf("reports %+v, want none", d.reports)
	}
	for _, name := range nodes {
		n := getNode(t, name)
		if got := (nodeState{nodeanno.Desired(n), n.Spec.Taints}); got.desired != before[name].desired || !equality.Semantic.DeepEqual(got.taints, before[name].taints) {
			t.Errorf("node %s: desired %s taints %v after the drive, was desired %s taints %v; want it left alone",
				name, got.desired, got.taints, before[name].desired, before[name].taints)
		}
	}
	// Nothing else writes the pool while no controller's loops run.
	if p := getPool(t, "dph"); p.ResourceVersion != poolBefore.ResourceVersion || !equality.Semantic.DeepEqual(p.Status, poolBefore.Status) {
		t.Errorf("pool dph was written (resourceVersion %s, was %s): status %s, was %s", p.ResourceVersion, poolBefore.ResourceVersion, condString(p), condString(poolBefore))
	}
}

// TestDriveStops: driving stops, naming the node, as soon as a node fails its
// update; and at once on a paused pool, whose nodes it leaves untainted.
func TestDriveStops(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "dps", ptr.To(intstr.FromInt32(1)), false)
	v1 := machineConfig(t, "00-dps", "dps", "/etc/dps", "v1")
	applyMC(t, v1)
	nodes := createNodes(t, "dps", "rendered-dps-old", "", "")
	setPaused(t, "dps", true)
	target := controllertest.RenderByHand(t, env.MachineConfig, pool.Name, v1)

	var d drive
	end, err := d.run(ctx, t, "dps", "lease-dps", "mcotui-tui@test")
	if err != nil || end != controller.DrivePaused {
		t.Fatalf("paused pool: the drive = %q, %v; want %q", end, err, controller.DrivePaused)
	}
	for _, name := range nodes {
		if n := getNode(t, name); rollout.HasUpdateInProgressTaint(n) || nodeanno.Desired(n) != "rendered-dps-old" {
			t.Errorf("node %s of the paused pool: desired %s taints %v; want it left alone", name, nodeanno.Desired(n), n.Spec.Taints)
		}
	}

	setPaused(t, "dps", false)
	startFakeAgent(t, "dps", 200*time.Millisecond, "dps-0")
	d = drive{}
	end, err = d.run(ctx, t, "dps", "lease-dps", "mcotui-tui@test")
	if err != nil || end != controller.DriveDegraded {
		t.Fatalf("failing node: the drive = %q, %v; want %q", end, err, controller.DriveDegraded)
	}
	if want := "pool dps: stopped driving: dps-0 (boom) failed to update to " + target; d.last().Message != want {
		t.Errorf("last message %q, want %q", d.last().Message, want)
	}
	if got := d.targeted(); !slices.Equal(got, []string{"dps-0"}) {
		t.Errorf("targeted %v, want dps-0 only (maxUnavailable 1, and it failed)", got)
	}
}
