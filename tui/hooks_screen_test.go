package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
)

// TestHoldsVisible: what holds a pool's rollout in RolloutHeld, written by the
// controller or a drive (a failed hook, a pool waiting for another, a halt on
// unhealthy nodes, a CEL health check), is on the screen at the smallest and the
// largest size, under the pools, for the pool selected.
func TestHoldsVisible(t *testing.T) {
	for _, hold := range []struct{ reason, message, shows string }{
		{"HookFailed", "hook after-node for node infra-0 failed: Job hooks/smoke-1a2b3c4d5e6f7a8b (BackoffLimitExceeded: Job has reached the specified backoff limit); last lines: container hook exited 1: curl: (7) Failed to connect",
			"RolloutHeld: hook after-node for node infra-0 failed"},
		{"NodeHookFailed", "hook before-drain for node infra-0 failed: Job hooks/prep-1a2b3c4d5e6f7a8b (BackoffLimitExceeded: Job has reached the specified backoff limit); last lines: container hook exited 1: rsync: connection refused; node infra-0 stops here (not targeted, left as it is, counted against maxUnavailable; the other nodes go on): fix the cause, then delete the Job (kubectl delete job -n hooks prep-1a2b3c4d5e6f7a8b) to run the hook again",
			"RolloutHeld: hook before-drain for node infra-0 failed"},
		{"WaitingForPool", "waiting for pool canary to be updated (1 of 3 machines updated to rendered-canary-1)", "RolloutHeld: waiting for pool canary"},
		{"UnhealthyNodes", "halted: 2 nodes updated by this rollout are unhealthy (mcotui.io/halt-unhealthy-nodes is 2): infra-0, infra-1", "RolloutHeld: halted: 2 nodes"},
		{"GateFailing", "held by a health gate: health check ceph: cephcluster rook-ceph/rook-ceph is not healthy (object.status.ceph.health == 'HEALTH_OK' is false)", "RolloutHeld: held by a health gate: health check ceph"},
	} {
		for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
			t.Run(fmt.Sprintf("%s/%dx%d", hold.reason, size.w, size.h), func(t *testing.T) {
				ev := fixture.Small()
				for _, e := range ev {
					if p := e.Pool; p != nil && p.Name == "infra" {
						p.Annotations = map[string]string{policy.HookKey(policy.AfterNode): "hooks/smoke"}
						p.Status.Conditions = append(p.Status.Conditions, mcfgv1.MachineConfigPoolCondition{
							Type: policy.HeldCondition, Status: corev1.ConditionTrue, Reason: hold.reason, Message: hold.message,
						})
					}
				}
				src := model.NewChanSource(fixture.Info, ev, 16)
				t.Cleanup(src.Close)
				ui := New(src, Options{Clock: fixture.Clock(fixture.Now), NoColor: true, Refresh: -1, NoticeTimeout: -1, Actions: &tuitest.Actions{}})
				drive(ui, tea.WindowSizeMsg{Width: size.w, Height: size.h})
				view := ui.View().Content
				checkShape(t, view, size.w, size.h)
				if !strings.Contains(tuitest.Plain(view), hold.shows) {
					t.Errorf("%q not on the %dx%d screen:\n%s", hold.shows, size.w, size.h, tuitest.Plain(view))
				}
			})
		}
	}
}
