package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/alertmanager"
	"github.com/mcotui/mcotui/platform/alertmanager/amtest"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/notify"
)

// inbox is an in-process webhook receiver of the controller's notifications (shoutrrr's
// generic JSON payload): each message; news is closed (and replaced) at each, so that
// every waiter wakes.
type inbox struct {
	mu   sync.Mutex
	msgs []string
	news chan struct{}
}

func newInbox(t *testing.T) (*inbox, string) {
	in := &inbox{news: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]string
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in.mu.Lock()
		in.msgs = append(in.msgs, m["message"])
		close(in.news)
		in.news = make(chan struct{})
		in.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return in, "generic://" + strings.TrimPrefix(srv.URL, "http://") + "/hook?template=json&disabletls=yes"
}

func (in *inbox) all() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.msgs...)
}

// wait waits until msg has arrived, waking on each message, bounded by ctx.
func (in *inbox) wait(ctx context.Context, msg string) error {
	for {
		in.mu.Lock()
		has, news := slices.Contains(in.msgs, msg), in.news
		in.mu.Unlock()
		if has {
			return nil
		}
		select {
		case <-news:
		case <-ctx.Done():
			return fmt.Errorf("notification %q never came; got %q", msg, in.all())
		}
	}
}

func (in *inbox) await(ctx context.Context, t *testing.T, msg string) {
	t.Helper()
	if err := in.wait(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// phaseAgent plays an agent that writes its MachineConfigNode's phases, with
// transition times a fixed time apart (10s drain, 20s apply, 60s reboot, 10s ready),
// and waits, after the drain and after the reboot, for the controller's notification
// of it: the test then knows the controller saw each phase.
type phaseAgent struct {
	t     *testing.T
	inbox *inbox
	// release, when it has the node, is waited on while the node is drained: the test
	// looks at its silence meanwhile.
	release map[string]chan struct{}
}

func (a *phaseAgent) start(ctx context.Context, pool string) {
	w := &kube.NodeWorkers{Kube: env.Kube, Selector: roleLabel(pool), Workers: 4,
		Pending: func(n *corev1.Node) bool {
			return nodeanno.Desired(n) != "" && nodeanno.Current(n) != nodeanno.Desired(n)
		},
		Work: func(ctx context.Context, n *corev1.Node) error { return a.update(ctx, n) },
	}
	wait, err := w.Start(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(wait)
}

func (a *phaseAgent) update(ctx context.Context, n *corev1.Node) error {
	desired := nodeanno.Desired(n)
	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := mcns.Get(ctx, n.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		mcn, err = kubetest.CreateMachineConfigNode(ctx, env.MachineConfig, n, kubetest.MachineConfigNode{Pool: "pw", Desired: desired, Conditions: phase.Initial(metav1.Now())})
	}
	if err != nil {
		return err
	}
	t0 := time.Now().Truncate(time.Second)
	write := func(after time.Duration, conds ...phase.Condition) error {
		cs, _ := phase.Apply(mcn.Status.Conditions, desired, metav1.NewTime(t0.Add(after)), conds...)
		mcn.Status.Conditions = cs
		out, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{})
		if err == nil {
			mcn = out
		}
		return err
	}
	if err := write(0, phase.Condition{Type: phase.UpdatePrepared, Status: metav1.ConditionTrue}); err != nil {
		return err
	}
	if err := write(10*time.Second, phase.Condition{Type: phase.Drained, Status: metav1.ConditionTrue}); err != nil {
		return err
	}
	if err := a.inbox.wait(ctx, "NodeDrained "+n.Name); err != nil {
		a.t.Error(err)
		return err
	}
	if ch, ok := a.release[n.Name]; ok {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := write(30*time.Second, phase.Condition{Type: phase.AppliedFilesAndOS, Status: metav1.ConditionTrue}); err != nil {
		return err
	}
	if err := write(90*time.Second, phase.Condition{Type: phase.RebootedNode, Status: metav1.ConditionTrue}); err != nil {
		return err
	}
	if err := a.inbox.wait(ctx, "NodeRebooted "+n.Name); err != nil {
		a.t.Error(err)
		return err
	}
	if err := write(100*time.Second, phase.Condition{Type: phase.Updated, Status: metav1.ConditionTrue}); err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		nodeanno.CurrentConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone,
	}}})
	_, err = env.Kube.CoreV1().Nodes().Patch(ctx, n.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	return err
}

// TestPhaseWatchNotifiesSilencesAndMeasures: a rollout of three nodes, one at a time,
// sends every notification in order to a webhook, holds a real Alertmanager silence
// for each node while it updates (renewed) and expires it when the node is Done, and
// leaves the measured phase times on the pool.
func TestPhaseWatchNotifiesSilencesAndMeasures(t *testing.T) {
	ctx := kubetest.Context(t)
	amURL := amtest.Start(t)
	am, err := alertmanager.New(amURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	in, hookURL := newInbox(t)
	sender, err := notify.New([]string{hookURL}, notify.Options{Template: "{{.Kind}}{{with .Node}} {{.}}{{end}}", Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	senderCtx, stopSender := context.WithCancel(context.Background())
	defer stopSender()
	go sender.Run(senderCtx)

	pool := createPool(t, "pw", ptr.To(intstr.FromInt32(1)), false)
	v1 := machineConfig(t, "00-pw", "pw", "/etc/pw", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pw", "rendered-pw-old", "", "", "")

	agent := &phaseAgent{t: t, inbox: in, release: map[string]chan struct{}{}}
	for _, n := range nodes {
		agent.release[n] = make(chan struct{})
	}
	agent.start(ctx, "pw")
	matchers, _ := alertmanager.ParseMatchers(alertmanager.DefaultMatchers)
	startController(t, "lease-pw", "pw-a", func(c *controller.Config) {
		c.PhaseWatch = controller.PhaseWatch{Notify: sender, Alertmanager: am, SilenceMatchers: matchers, SilenceDuration: 4 * time.Second}
	})
	applyMC(t, v1)

	for i, node := range nodes {
		// The node is drained and held there: its silence is active; with a 4s
		// duration it is renewed every 2s while the node updates.
		in.await(ctx, t, "NodeDrained "+node)
		first := activeSilence(ctx, t, am, node)
		if i == 0 {
			kubetest.Eventually(t, time.Minute, "silence of "+node+" renewed", func() (bool, string) {
				s := activeSilence(ctx, t, am, node)
				return s.EndsAt.After(first.EndsAt) && s.ID == first.ID, fmt.Sprintf("%s ends %s; first %s ends %s", s.ID, s.EndsAt, first.ID, first.EndsAt)
			})
		}
		close(agent.release[node])
	}
	in.await(ctx, t, "RolloutDone")
	want := []string{"RolloutStarted"}
	for _, n := range nodes {
		want = append(want, "NodeDrained "+n, "NodeRebooted "+n, "NodeDone "+n)
	}
	want = append(want, "RolloutDone")
	if got := in.all(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notifications:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every silence expired once its node was Done.
	kubetest.Eventually(t, time.Minute, "every silence expired", func() (bool, string) {
		ss, err := am.List(ctx)
		if err != nil {
			return false, err.Error()
		}
		var active []string
		for _, s := range ss {
			if s.Status.State != "expired" {
				active = append(active, s.Matchers[0].Value)
			}
		}
		return len(active) == 0 && len(ss) >= len(nodes), fmt.Sprintf("%d silences, active: %v", len(ss), active)
	})
	// The phase times: 10s drain, 20s apply, 60s reboot, 10s ready, per node.
	kubetest.Eventually(t, time.Minute, "phase times on the pool", func() (bool, string) {
		p := getPool(t, "pw")
		r, err := estimate.Parse(p)
		if err != nil {
			return false, err.Error()
		}
		want := estimate.Sample{Drain: 10 * time.Second, Apply: 20 * time.Second, Reboot: time.Minute, Ready: 10 * time.Second}
		ok := len(r.Samples) == 3
		for _, s := range r.Samples {
			ok = ok && s == want
		}
		return ok, p.Annotations[estimate.PhaseTimesKey] + " " + r.Basis()
	})
	if p := getPool(t, "pw"); p.Spec.Configuration.Name != target {
		t.Fatalf("pool at %s, want %s", p.Spec.Configuration.Name, target)
	}
}

// activeSilence is the node's active silence (instance=node), or fails the test.
func activeSilence(ctx context.Context, t *testing.T, am *alertmanager.Client, node string) alertmanager.Silence {
	t.Helper()
	ss, err := am.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Status.State == "active" && len(s.Matchers) == 1 && s.Matchers[0].Name == "instance" && s.Matchers[0].Value == node {
			return s
		}
	}
	t.Fatalf("no active silence of node %s: %+v", node, ss)
	return alertmanager.Silence{}
}

// TestPhaseWatchDegradedNodeHaltsAndExpiresItsSilence: a node that fails its update
// is told (NodeDegraded, then RolloutHalted with the pool's reason); its silence is
// expired, since its alerts are now real; a silence Alertmanager refuses (here: none
// runs) is reported and the rollout goes on.
func TestPhaseWatchDegradedNodeHalts(t *testing.T) {
	ctx := kubetest.Context(t)
	in, hookURL := newInbox(t)
	sender, err := notify.New([]string{hookURL}, notify.Options{Template: "{{.Kind}}{{with .Node}} {{.}}{{end}}", Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	senderCtx, stopSender := context.WithCancel(context.Background())
	defer stopSender()
	go sender.Run(senderCtx)
	// An Alertmanager that is not there.
	deadAM, _ := alertmanager.New("http://127.0.0.1:1", nil)
	var mu sync.Mutex
	failed := map[string]bool{}

	pool := createPool(t, "pwd", ptr.To(intstr.FromInt32(2)), false)
	v1 := machineConfig(t, "00-pwd", "pwd", "/etc/pwd", "v1")
	_ = expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pwd", "rendered-pwd-old", "", "")
	startFakeAgent(t, "pwd", 100*time.Millisecond, nodes[1])
	matchers, _ := alertmanager.ParseMatchers(alertmanager.DefaultMatchers)
	startController(t, "lease-pwd", "pwd-a", func(c *controller.Config) {
		c.PhaseWatch = controller.PhaseWatch{Notify: sender, Alertmanager: deadAM, SilenceMatchers: matchers, SilenceDuration: time.Minute,
			OnSilenceFailed: func(_, node, op string) {
				mu.Lock()
				failed[node+" "+op] = true
				mu.Unlock()
			}}
	})
	applyMC(t, v1)
	in.await(ctx, t, "NodeDegraded "+nodes[1])
	in.await(ctx, t, "RolloutHalted")
	in.await(ctx, t, "NodeDone "+nodes[0]) // the rollout went on without its silence
	mu.Lock()
	defer mu.Unlock()
	if !failed[nodes[0]+" create"] {
		t.Errorf("no silence failure reported for %s: %v", nodes[0], failed)
	}
	kubetest.Eventually(t, time.Minute, "pool NodeDegraded", func() (bool, string) {
		p := getPool(t, "pwd")
		c := poolCondition(p, mcfgv1.MachineConfigPoolNodeDegraded)
		return c != nil && c.Status == corev1.ConditionTrue, condString(p)
	})
}
