package controller_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// TestBareDriverRollsOutWithinItsBudget: the floor BenchmarkRollout measures the
// controller against is a rollout: on real kwok nodes with InstantAgent, every node
// ends Done at the target, and a watch of the nodes never sees more than
// MaxUnavailable of them updating at once.
func TestBareDriverRollsOutWithinItsBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := unthrottled(env.Config)
	kc := kubernetes.NewForConfigOrDie(admin)
	mc := mcfgclient.NewForConfigOrDie(admin)
	pool := fmt.Sprintf("bare%d", rand.IntN(1_000_000))
	const n, maxU = 12, 3
	t.Cleanup(func() { cleanupBenchPool(t, kc, mc, pool, n) })
	if err := createBenchNodes(ctx, kc, mc, pool, "rendered-"+pool+"-old", n); err != nil {
		t.Fatal(err)
	}
	list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: roleLabel(pool)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := kc.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: roleLabel(pool), ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	(&controllertest.InstantAgent{Kube: kc, Selector: roleLabel(pool)}).Start(t)
	d := &controllertest.BareDriver{Kube: kc, Selector: roleLabel(pool), MaxUnavailable: maxU}
	d.Start(t)
	target := "rendered-" + pool + "-new"
	rolled := make(chan error, 1)
	go func() { rolled <- d.Roll(ctx, target) }()

	// One watch delivers the nodes' changes in the order the API server made them, so
	// the count after each event is the number updating at that moment.
	updating, most := map[string]bool{}, 0
	done := map[string]bool{}
	for len(done) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the nodes ended")
			}
			node, isNode := ev.Object.(*corev1.Node)
			if !isNode || ev.Type != watch.Modified {
				continue
			}
			atTarget := nodeanno.Current(node) == target && nodeanno.State(node) == nodeanno.StateDone
			updating[node.Name] = nodeanno.Desired(node) == target && !atTarget
			if atTarget {
				done[node.Name] = true
			}
			count := 0
			for _, u := range updating {
				if u {
					count++
				}
			}
			most = max(most, count)
		case <-ctx.Done():
			t.Fatalf("%d of %d nodes Done at %s when the test's time ran out", len(done), n, target)
		}
	}
	if err := <-rolled; err != nil {
		t.Fatalf("roll: %v", err)
	}
	if most > maxU {
		t.Errorf("%d nodes were updating at once, more than maxUnavailable %d", most, maxU)
	}
}
