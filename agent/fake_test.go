package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// fakeCluster is a Cluster in memory, for the unit tests of the state machine. The
// integration tests use the real nodeagent.NodeAgent against a real API server instead.
type fakeCluster struct {
	mu      sync.Mutex
	node    *corev1.Node
	mcs     map[string]*mcfgv1.MachineConfig
	pools   []*mcfgv1.MachineConfigPool
	policy  disruption.Policy
	conds   []metav1.Condition
	events  []string
	pods    []string // evicted in order by Drain
	blocked []phase.Blocker
	// drainGate, when set, is waited on by Drain after reporting blocked (a closed PDB).
	drainGate chan struct{}
	drains    int
	evicted   []string
	cordons   int
	changes   chan struct{}
	// overrides is ValidationOverrides'; irreconcilable what SetIrreconcilableChanges
	// last wrote.
	overrides      operatorv1.IrreconcilableValidationOverrides
	irreconcilable []mcfgv1.IrreconcilableChangeDiff
}

func newFakeCluster(name string) *fakeCluster {
	return &fakeCluster{
		node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{},
			Labels: map[string]string{workerRole: ""}}},
		mcs:     map[string]*mcfgv1.MachineConfig{},
		pools:   []*mcfgv1.MachineConfigPool{testPool(testPoolUID)},
		policy:  disruption.DefaultPolicy(),
		changes: make(chan struct{}, 1),
	}
}

func (f *fakeCluster) notify() {
	select {
	case f.changes <- struct{}{}:
	default:
	}
}

func (f *fakeCluster) Node(context.Context) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node.DeepCopy(), nil
}

func (f *fakeCluster) Changes() <-chan struct{} { return f.changes }

func (f *fakeCluster) Pools(context.Context) ([]*mcfgv1.MachineConfigPool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*mcfgv1.MachineConfigPool, len(f.pools))
	for i, p := range f.pools {
		out[i] = p.DeepCopy()
	}
	return out, nil
}

func (f *fakeCluster) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mc, ok := f.mcs[name]
	if !ok {
		return nil, fmt.Errorf("machineconfig %s not found", name)
	}
	return mc.DeepCopy(), nil
}

func (f *fakeCluster) DisruptionPolicy(context.Context) (disruption.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.policy, nil
}

func (f *fakeCluster) ValidationOverrides(context.Context) (operatorv1.IrreconcilableValidationOverrides, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.overrides, nil
}

func (f *fakeCluster) SetIrreconcilableChanges(_ context.Context, _ string, diffs []mcfgv1.IrreconcilableChangeDiff) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.irreconcilable = slices.Clone(diffs)
	return nil
}

func (f *fakeCluster) Annotate(_ context.Context, ann map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range ann {
		if v == "" {
			delete(f.node.Annotations, k)
		} else {
			f.node.Annotations[k] = v
		}
	}
	return nil
}

func (f *fakeCluster) annotation(k string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node.Annotations[k]
}

func (f *fakeCluster) setDesired(name string) {
	f.mu.Lock()
	f.node.Annotations[nodeanno.DesiredConfigKey] = name
	f.mu.Unlock()
	f.notify()
}

func (f *fakeCluster) Cordon(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node.Spec.Unschedulable {
		return nil
	}
	f.cordons++
	f.node.Spec.Unschedulable = true
	f.node.Annotations[nodeanno.CordonedByKey] = nodeanno.CordonedByAgent
	return nil
}

func (f *fakeCluster) Uncordon(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node.Annotations[nodeanno.CordonedByKey] != nodeanno.CordonedByAgent {
		return nil
	}
	f.node.Spec.Unschedulable = false
	delete(f.node.Annotations, nodeanno.CordonedByKey)
	return nil
}

func (f *fakeCluster) unschedulable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node.Spec.Unschedulable
}

func (f *fakeCluster) Drain(ctx context.Context, blocked func([]phase.Blocker), evicted func(string), _ func(int, time.Time)) error {
	f.mu.Lock()
	f.drains++
	pods, gate, bs := f.pods, f.drainGate, f.blocked
	f.mu.Unlock()
	if gate != nil {
		blocked(bs)
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for len(pods) > 0 {
		p := pods[0]
		f.mu.Lock()
		f.pods = f.pods[1:]
		f.evicted = append(f.evicted, p)
		f.mu.Unlock()
		pods = pods[1:]
		evicted(p)
	}
	return nil
}

func (f *fakeCluster) SetConditions(_ context.Context, desired string, conds ...phase.Condition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conds, _ = phase.Apply(f.conds, desired, metav1.NewTime(time.Now()), conds...)
	return nil
}

func (f *fakeCluster) condition(t mcfgv1.StateProgress) metav1.Condition {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, _ := phase.Find(f.conds, t)
	return c
}

func (f *fakeCluster) Event(eventType, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, eventType+" "+reason+": "+message)
}

func (f *fakeCluster) eventReasons() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, e := range f.events {
		var typ, reason string
		fmt.Sscanf(e, "%s %s", &typ, &reason)
		out[reason[:len(reason)-1]]++
	}
	return out
}
