// Package tuitest is what the TUI's tests share: a Common over a fixture with a stopped
// clock, golden files, and fakes of the actions and the driver (tests that run the
// real program wait on its screen with tui/screentest). Importing it registers the
// -update flag (through x/exp/golden) in every test binary of tui/..., so that
// `go test ./tui/... -update` refreshes every golden file at once. Only tests import
// it.
package tuitest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/action"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/keys"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/styles"
)

// Common returns what panes share, over a store holding events, with the clock stopped
// at fixture.Now.
func Common(color bool, events []model.Event) *common.Common {
	s := model.NewStore()
	s.Apply(events)
	return &common.Common{
		Styles: styles.New(color),
		Keys:   keys.Default(),
		Clock:  fixture.Clock(fixture.Now),
		Store:  s,
		Info:   fixture.Info,
	}
}

// Golden compares a view, without its styles, with testdata/<test name>.golden: the
// layout and text, in a file that reads as the screen does in any viewer.
func Golden(t *testing.T, view string) {
	t.Helper()
	golden.RequireEqual(t, ansi.Strip(view))
}

// GoldenStyled compares a view with its escape sequences with
// testdata/<test name>.golden; `cat` shows the file as the terminal would.
func GoldenStyled(t *testing.T, view string) {
	t.Helper()
	golden.RequireEqual(t, view)
}

// Plain strips styles, for assertions on text.
func Plain(s string) string { return ansi.Strip(s) }

// Actions records the actions the TUI asks for, for tests of the UI alone; tests of
// what the actions do to a cluster use tui/source's kube Actions against a real API
// server. It is safe for concurrent use: the program calls it from a command.
type Actions struct {
	mu    sync.Mutex
	calls []string
	// Err, when set, is what every action returns.
	Err error
}

// Calls returns the calls so far, one string each: "SetPaused infra false".
func (a *Actions) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *Actions) record(format string, args ...any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, fmt.Sprintf(format, args...))
	return a.Err
}

// SetPaused implements action.Actions.
func (a *Actions) SetPaused(_ context.Context, pool string, paused bool) error {
	return a.record("SetPaused %s %t", pool, paused)
}

// EvictPod implements action.Actions.
func (a *Actions) EvictPod(_ context.Context, namespace, name string) error {
	return a.record("EvictPod %s/%s", namespace, name)
}

// DeletePod implements action.Actions.
func (a *Actions) DeletePod(_ context.Context, namespace, name string) error {
	return a.record("DeletePod %s/%s", namespace, name)
}

// SetMaxUnavailable implements action.Actions.
func (a *Actions) SetMaxUnavailable(_ context.Context, pool string, v intstr.IntOrString) error {
	return a.record("SetMaxUnavailable %s %s", pool, v.String())
}

// Rollout implements action.Actions.
func (a *Actions) Rollout(_ context.Context, pool string, nodes []string) (rollout.Step, error) {
	err := a.record("Rollout %s %s", pool, strings.Join(nodes, ","))
	return rollout.Step{Pool: pool, Targets: nodes}, err
}

// RollForward implements action.Actions.
func (a *Actions) RollForward(_ context.Context, pool, to string) error {
	return a.record("RollForward %s %s", pool, to)
}

// RollBack implements action.Actions.
func (a *Actions) RollBack(_ context.Context, pool, to, from string) error {
	return a.record("RollBack %s %s %s", pool, to, from)
}

// Retry implements action.Actions.
func (a *Actions) Retry(_ context.Context, pool, node string) error {
	return a.record("Retry %s %s", pool, node)
}

// SetBootImageMode implements action.Actions.
func (a *Actions) SetBootImageMode(_ context.Context, sel operatorv1.MachineManagerSelector) error {
	return a.record("SetBootImageMode %s", bootimage.DescribeSelection(sel))
}

var _ action.Actions = (*Actions)(nil)

// Driver is an action.Driver for tests of the UI alone: it reports that it holds the
// Lease, then Reports one by one, then drives on until its context ends, as a Driver
// whose pool is still rolling out does. Tests of what driving does to a cluster use
// the controller's driver against a real API server (cmd/interactive).
type Driver struct {
	Reports []action.DriveReport
	// Err, when set, is what Drive returns at once, reporting nothing, as a Driver
	// that cannot take the Lease does.
	Err error
	// HeldBy, when set, holds the Lease (Holder); HolderErr is Holder's error.
	HeldBy    string
	HolderErr error

	mu      sync.Mutex
	pools   []string
	ctxs    []context.Context
	stopped int
}

// Lease implements action.Driver.
func (d *Driver) Lease() string { return "mcotui/mcotui-controller" }

// Holder implements action.Driver.
func (d *Driver) Holder(context.Context) (string, bool, error) {
	return d.HeldBy, d.HeldBy != "", d.HolderErr
}

// Drive implements action.Driver.
func (d *Driver) Drive(ctx context.Context, pool string, report func(action.DriveReport)) error {
	d.mu.Lock()
	d.pools = append(d.pools, pool)
	d.ctxs = append(d.ctxs, ctx)
	d.mu.Unlock()
	if d.Err != nil {
		return d.Err
	}
	report(action.DriveReport{Leading: true})
	for _, r := range d.Reports {
		report(r)
	}
	<-ctx.Done()
	d.mu.Lock()
	d.stopped++
	d.mu.Unlock()
	return nil
}

// Driven returns the pools Drive was called for, and how many of those drives were
// stopped.
func (d *Driver) Driven() (pools []string, stopped int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.pools...), d.stopped
}

// Contexts returns the context of each Drive so far, in order: a test asks whether
// the program has cancelled a drive without waiting for Drive to notice.
func (d *Driver) Contexts() []context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]context.Context(nil), d.ctxs...)
}

var _ action.Driver = (*Driver)(nil)

// Events is an action.Events over a fixed list, for tests of the UI alone; tests of
// the kube reader use tui/source against a real API server.
type Events []corev1.Event

// Events implements action.Events.
func (e Events) Events(_ context.Context, kind, name string) ([]corev1.Event, error) {
	var out []corev1.Event
	for _, ev := range e {
		if (kind == "" && name == "") || (ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name) {
			out = append(out, ev)
		}
	}
	return out, nil
}

var _ action.Events = Events(nil)

// Pods is an action.Pods over fixed pods, for tests of the UI alone; tests of the kube
// reader use tui/source against a real API server. A pod's log is Logs[namespace/name].
type Pods struct {
	Pods    []corev1.Pod
	Budgets []policyv1.PodDisruptionBudget
	Logs    map[string]string
}

// Pod implements action.Pods.
func (p *Pods) Pod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	for i := range p.Pods {
		if p.Pods[i].Namespace == namespace && p.Pods[i].Name == name {
			return p.Pods[i].DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("read pod %s/%s: not found", namespace, name)
}

// PodLog implements action.Pods.
func (p *Pods) PodLog(ctx context.Context, namespace, name string, _ int64) (string, error) {
	if _, err := p.Pod(ctx, namespace, name); err != nil {
		return "", err
	}
	return p.Logs[namespace+"/"+name], nil
}

// Budget implements action.Pods.
func (p *Pods) Budget(_ context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	for i := range p.Budgets {
		if p.Budgets[i].Namespace == namespace && p.Budgets[i].Name == name {
			return p.Budgets[i].DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("read PodDisruptionBudget %s/%s: not found", namespace, name)
}

// PodsOn implements action.Pods.
func (p *Pods) PodsOn(_ context.Context, node string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, pod := range p.Pods {
		if pod.Spec.NodeName == node {
			out = append(out, pod)
		}
	}
	return out, nil
}

var _ action.Pods = (*Pods)(nil)
