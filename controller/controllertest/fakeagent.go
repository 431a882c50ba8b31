// Package controllertest holds test doubles for the tests of the controller and of the
// commands that drive it. Nothing here runs in production.
package controllertest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// FakeAgent is a test double of mcotui's agent, for the controller's tests until the
// real agent runs in end-to-end tests (it is tested on its own in package agent). For
// every node matching its label selector whose desiredConfig differs from its
// currentConfig, it writes state Working, waits Work, then writes currentConfig =
// desiredConfig and state Done, as an agent does at the end of an update. A node named
// in Fail reports state Degraded with reason "boom" instead, and is left alone until
// its desired config changes.
//
// It only writes the node annotations the controller reads; it neither cordons, drains
// nor writes MachineConfigNode conditions.
type FakeAgent struct {
	Kube     kubernetes.Interface
	Selector string // label selector of the nodes it plays the agent of
	Work     time.Duration
	Fail     map[string]bool

	mu   sync.Mutex
	busy map[string]bool
}

// Start runs the fake agent until the test ends.
func (a *FakeAgent) Start(t testing.TB) {
	t.Helper()
	a.busy = map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	wg.Go(func() { a.run(ctx, &wg) })
}

func (a *FakeAgent) run(ctx context.Context, wg *sync.WaitGroup) {
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := a.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: a.Selector})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			n := &list.Items[i]
			cur, des, st := nodeanno.Current(n), nodeanno.Desired(n), nodeanno.State(n)
			failed := a.Fail[n.Name] && st == nodeanno.StateDegraded
			if des == "" || (cur == des && st == nodeanno.StateDone) || failed {
				continue
			}
			a.mu.Lock()
			if a.busy[n.Name] {
				a.mu.Unlock()
				continue
			}
			a.busy[n.Name] = true
			a.mu.Unlock()
			wg.Go(func() {
				defer func() {
					a.mu.Lock()
					delete(a.busy, n.Name)
					a.mu.Unlock()
				}()
				a.update(ctx, n.Name, des)
			})
		}
		return false, nil
	})
}

func (a *FakeAgent) update(ctx context.Context, node, desired string) {
	patch := func(anns map[string]any) error {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
		if err != nil {
			return err
		}
		_, err = a.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fake-agent"})
		return err
	}
	// The list that started this update may predate this agent's own Done write of an
	// update just finished (the loop lists while one runs): a node that no longer needs
	// the update must not be set Working again, which would make it unavailable as no
	// real agent does.
	n, err := a.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || nodeanno.Desired(n) != desired || (nodeanno.Current(n) == desired && nodeanno.State(n) == nodeanno.StateDone) {
		return
	}
	if err := patch(map[string]any{nodeanno.StateKey: nodeanno.StateWorking}); err != nil {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(a.Work):
	}
	if a.Fail[node] {
		_ = patch(map[string]any{nodeanno.StateKey: nodeanno.StateDegraded, nodeanno.ReasonKey: "boom"})
		return
	}
	_ = patch(map[string]any{nodeanno.CurrentConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: nil})
}
