package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/store"
)

// agentProgress reads how far the agent of node has got, for Options.Progress: its
// journal in the guest (`mcotui journal -o json`, as an operator on the node reads it)
// and its Node's annotations. Work is pending while the journal has an update in
// progress or the desired config is not current; the step is the update's target, its
// last phase and result, and the node's state, which a retry of the same failing step
// repeats.
func agentProgress(node string) func(ctx context.Context, m *Machine) (Progress, error) {
	return func(ctx context.Context, m *Machine) (Progress, error) {
		obj, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return Progress{}, err
		}
		r, err := m.ExecQuiet(ctx, GuestBinary+" journal -o json")
		if err != nil {
			return Progress{}, err
		}
		var us []store.Update
		if r.Code == 0 {
			if err := json.Unmarshal([]byte(r.Stdout), &us); err != nil {
				return Progress{}, fmt.Errorf("mcotui journal -o json: %w", err)
			}
		} else if !strings.Contains(r.Stderr, "no journal at") {
			// No journal yet is no work done yet; anything else is a poll that failed.
			return Progress{}, errors.New(r.Stderr)
		}
		current, desired, state := nodeanno.Current(obj), nodeanno.Desired(obj), nodeanno.State(obj)
		p := Progress{Pending: current != desired}
		journal := "no update journaled"
		if len(us) > 0 {
			u := us[len(us)-1]
			p.Pending = p.Pending || u.Result == store.ResultInProgress
			ph := "none"
			if len(u.Phases) > 0 {
				ph = u.Phases[len(u.Phases)-1].Name
			}
			p.Step = fmt.Sprintf("update to %s: phase %s, %s", u.To, ph, u.Result)
			journal = fmt.Sprintf("the journal's update %d to %s is %s in phase %s since %s (%q)", u.ID, u.To, u.Result, ph,
				u.Phases[max(0, len(u.Phases)-1)].Started.Format(time.TimeOnly), u.Message)
		}
		p.Step += fmt.Sprintf("; node %s on %s for %s", state, current, desired)
		p.Detail = fmt.Sprintf("%s; node %s is %s on %s, desired %s (%s)", journal, node, state, current, desired, obj.Annotations[nodeanno.ReasonKey])
		return p, nil
	}
}

// TestHarnessProgress: the harness's stall detection by the agent's progress. An agent
// whose work is pending and which only repeats steps already seen (a retry that fails
// where it failed before) is stuck after ProgressTimeout, however chatty its console:
// the machine's Context ends with the agent's state; a new step, or nothing pending,
// starts the count again.
func TestHarnessProgress(t *testing.T) {
	m := &Machine{opts: Options{Node: "harness", StallTimeout: time.Hour, ProgressTimeout: time.Minute}, ctx: t.Context(), lastSign: time.Now()}
	m.cond = sync.NewCond(&m.mu)
	t0 := time.Now()
	m.progress = progressState{seen: map[string]bool{}, since: t0}
	steps := []struct {
		at    time.Duration
		p     Progress
		stuck bool
	}{
		{0, Progress{Pending: true, Step: "Drain"}, false},
		{50 * time.Second, Progress{Pending: true, Step: "Drain"}, false},
		{70 * time.Second, Progress{Pending: true, Step: "Reboot"}, false},                                // new: counts from here
		{100 * time.Second, Progress{Pending: true, Step: "Drain"}, false},                                // seen before: no progress
		{129 * time.Second, Progress{Pending: true, Step: "Reboot"}, false},                               // 59 s since Reboot first
		{150 * time.Second, Progress{Pending: false, Step: "Done"}, false},                                // nothing pending: resets
		{200 * time.Second, Progress{Pending: true, Step: "Reboot"}, false},                               // 50 s since idle
		{211 * time.Second, Progress{Pending: true, Step: "Reboot", Detail: "the journal says so"}, true}, // 61 s since idle
	}
	for _, s := range steps {
		m.mu.Lock()
		m.noteProgress(s.p, t0.Add(s.at))
		stuck := m.stuck
		m.mu.Unlock()
		if (stuck != nil) != s.stuck {
			t.Fatalf("at %s after %+v: stuck %v, want %t", s.at, s.p, stuck, s.stuck)
		}
	}
	// The console keeps talking; Context ends all the same, saying why.
	m.mu.Lock()
	m.lastSign = time.Now()
	m.mu.Unlock()
	ctx, cancel := m.Context()
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the machine's Context did not end for a stuck agent")
	}
	if err := cause(ctx); err == nil || !strings.Contains(err.Error(), "the agent made no progress for 1m1s") || !strings.Contains(err.Error(), "the journal says so") {
		t.Fatalf("Context ended with %v", err)
	}
}

// TestHarnessLockupReports: a guest whose kernel only reports a stuck CPU is silent to
// the harness; any other output is a sign of life.
func TestHarnessLockupReports(t *testing.T) {
	for _, c := range []struct {
		out  string
		only bool
	}{
		{"[   48.789755] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [systemd:1]\n", true},
		{"[   97.805812] rcu: INFO: rcu_preempt self-detected stall on CPU\n[   97.805812] rcu: \t1-....: (11006 ticks this GP) idle=23ac/1/0x4000000000000000 softirq=3539/3541 fqs=2352\n", true},
		{"[   48.789755] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [systemd:1]\n[   50.1] systemd[1]: Started dbus.service\n", false},
		{"[  OK  ] Reached target local-fs.target\n", false},
		{"\n", false},
	} {
		if got := onlyLockupReports([]byte(c.out)); got != c.only {
			t.Errorf("onlyLockupReports(%q) = %t, want %t", c.out, got, c.only)
		}
	}
}
