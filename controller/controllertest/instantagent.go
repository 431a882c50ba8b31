package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
)

// InstantAgent plays the agents of many nodes whose updates take no time, for the
// controller's benchmarks: as soon as a node's desiredConfig differs from what it last
// applied, it writes state Working, then currentConfig = desiredConfig and state Done,
// the two node writes with which an agent starts and ends an update. Unlike FakeAgent,
// which lists its nodes every 50ms, it follows them with an informer, so that a
// thousand nodes cost the API server one watch rather than a list of all of them
// twenty times a second.
//
// Like FakeAgent it only writes the node annotations the controller reads. Kube should
// not be rate limited (rest.Config.QPS < 0): each real agent has a client of its own.
type InstantAgent struct {
	Kube     kubernetes.Interface
	Selector string // label selector of the nodes it plays the agent of
	// Workers is how many nodes it updates at once. Default 16.
	Workers int
	// Duration is how long each update takes between the Working and the Done write,
	// as a real agent's drain, writes and reboot do; the wait holds no worker. Default
	// 0: Done follows Working at once.
	Duration time.Duration

	mu      sync.Mutex
	applied map[string]string // node name: the desired config it last finished
	errs    []error
}

// Start runs the agent until the test or benchmark ends, once its informer has
// synced. A write that fails is retried with backoff; Errors reports it.
func (a *InstantAgent) Start(tb testing.TB) {
	tb.Helper()
	a.applied = map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	w := &kube.NodeWorkers{Kube: a.Kube, Selector: a.Selector, Workers: a.Workers, Pending: a.pending, Work: a.update,
		Failed: func(_ string, err error) {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}}
	wait, err := w.Start(ctx)
	if err != nil {
		cancel()
		tb.Fatalf("instant agent: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		wait()
	})
}

// Errors returns the writes that failed so far (each was retried).
func (a *InstantAgent) Errors() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.errs...)
}

// pending reports whether n has a desired config this agent has not finished. What it
// finished is remembered, as a real agent's journal does, so that the informer's view
// of a node's own Working write, arriving after the Done write, starts nothing.
func (a *InstantAgent) pending(n *corev1.Node) bool {
	des := nodeanno.Desired(n)
	if des == "" || (nodeanno.Current(n) == des && nodeanno.State(n) == nodeanno.StateDone) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied[n.Name] != des
}

func (a *InstantAgent) update(ctx context.Context, n *corev1.Node) error {
	des := nodeanno.Desired(n)
	patch := func(anns map[string]any) error {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := a.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "instant-agent"}); err != nil {
			return fmt.Errorf("instant agent: node %s to %s: %w", n.Name, des, err)
		}
		return nil
	}
	if err := patch(map[string]any{nodeanno.StateKey: nodeanno.StateWorking}); err != nil {
		return err
	}
	if a.Duration > 0 {
		// Done later, off the worker: the node is remembered as finished now, so that
		// the informer's view of the Working write starts nothing.
		a.mu.Lock()
		a.applied[n.Name] = des
		a.mu.Unlock()
		time.AfterFunc(a.Duration, func() {
			for ctx.Err() == nil {
				err := patch(map[string]any{nodeanno.CurrentConfigKey: des, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: nil})
				if err == nil {
					return
				}
				a.mu.Lock()
				a.errs = append(a.errs, err)
				a.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
		return nil
	}
	if err := patch(map[string]any{nodeanno.CurrentConfigKey: des, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: nil}); err != nil {
		return err
	}
	a.mu.Lock()
	a.applied[n.Name] = des
	a.mu.Unlock()
	return nil
}
