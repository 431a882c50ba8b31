package apisim

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// candidate runs client-go's leader election on the Lease kube-system/demo until ctx
// ends. started receives its identity when it leads; seen receives the leader it
// observes.
func candidate(ctx context.Context, t *testing.T, kube kubernetes.Interface, id string, started, seen chan<- string) <-chan struct{} {
	t.Helper()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "demo",
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          "demo",
		LeaseDuration: 2 * time.Second,
		RenewDeadline: time.Second,
		RetryPeriod:   100 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { started <- id },
			OnStoppedLeading: func() {},
			OnNewLeader:      func(leader string) { seen <- id + " sees " + leader },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	return done
}

func TestLeaderElection(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	started := make(chan string, 4)
	seen := make(chan string, 16)
	ctxA, stopA := context.WithCancel(ctx)
	defer stopA()
	doneA := candidate(ctxA, t, c.Kube, "a", started, seen)
	if got := <-started; got != "a" {
		t.Fatalf("the only candidate %q did not lead first", got)
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneB := candidate(ctxB, t, c.Kube, "b", started, seen)
	// b reads the Lease and finds a holding it.
	for s := ""; s != "b sees a"; {
		select {
		case s = <-seen:
		case <-ctx.Done():
			t.Fatal("b never observed a as the leader")
		}
	}
	select {
	case id := <-started:
		t.Fatalf("%s leads while a holds the Lease", id)
	default:
	}

	// a stops without releasing the Lease, as a crash would: b takes over once it
	// expires.
	stopA()
	<-doneA
	select {
	case id := <-started:
		if id != "b" {
			t.Fatalf("%s took over, want b", id)
		}
	case <-ctx.Done():
		t.Fatal("b did not take over the Lease a stopped renewing")
	}
	l, err := c.Kube.CoordinationV1().Leases("kube-system").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "b" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("Lease holder %q, transitions %v; want b after one transition", *l.Spec.HolderIdentity, l.Spec.LeaseTransitions)
	}
	stopB()
	<-doneB
}
