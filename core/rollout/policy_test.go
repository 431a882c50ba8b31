package rollout_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

func annotated(k, v string) nodeOpt { return func(n *corev1.Node) { n.Annotations[k] = v } }

func mustPolicy(t *testing.T, anns map[string]string) policy.Policy {
	t.Helper()
	p := pool()
	p.Annotations = anns
	pol, err := policy.FromPool(p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// Outside the windows nothing starts, not even a retry; nodes mid-update are left to
// finish; inside, the rollout goes on at maxUnavailable.
func TestPlanHonoursMaintenanceWindows(t *testing.T) {
	pol := mustPolicy(t, map[string]string{policy.WindowsKey: "Sat 22:00-Sun 04:00 UTC"})
	ns := nodes(
		node("a", updating(oldCfg, newCfg)),
		node("b", degraded(oldCfg, newCfg, "boom")),
		node("c", at(oldCfg)),
		node("d", at(oldCfg)),
	)
	p := pool(maxUnavailable(intstr.FromInt32(3)))
	friday := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s, err := rollout.Plan(p, ns, rollout.Options{Policy: pol, Now: friday, Retry: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 0 || len(s.Retry) != 0 || s.Window.Open {
		t.Fatalf("outside the window: targets %v retry %v window %+v; want none", s.Targets, s.Retry, s.Window)
	}
	if want := "outside the maintenance windows: next window in 34h (Sat 22:00 UTC)"; s.Wait != want {
		t.Errorf("wait %q, want %q", s.Wait, want)
	}
	for _, sk := range s.Skipped {
		if (sk.Node == "c" || sk.Node == "d") && sk.Reason != rollout.SkipWindow {
			t.Errorf("skip %+v, want %s", sk, rollout.SkipWindow)
		}
	}
	saturday := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	s, err = rollout.Plan(p, ns, rollout.Options{Policy: pol, Now: saturday, Retry: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	// maxUnavailable 3: a is updating and b failing, so one more.
	if !slices.Equal(s.Targets, []string{"c"}) || !slices.Equal(s.Retry, []string{"b"}) || !s.Window.Open {
		t.Errorf("inside the window: targets %v retry %v, want [c] and [b]", s.Targets, s.Retry)
	}
	if _, err := rollout.Plan(p, ns, rollout.Options{Policy: pol}); err == nil {
		t.Error("windows without Now: no error")
	}
}

func TestPlanHeldByAGate(t *testing.T) {
	ns := nodes(node("a", at(oldCfg)), node("b", at(oldCfg)))
	s, err := rollout.Plan(pool(), ns, rollout.Options{Gate: `alert HighLatency firing (severity="critical")`})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 0 || s.Wait != `held by a health gate: alert HighLatency firing (severity="critical")` || s.Skipped[0].Reason != rollout.SkipGate {
		t.Errorf("step %+v", s)
	}
}

// A held node is never targeted and is listed as held; the others go on.
func TestPlanLeavesHeldNodesOut(t *testing.T) {
	ns := nodes(
		node("a", at(oldCfg), annotated(policy.HoldKey, "true")),
		node("b", at(oldCfg), annotated(policy.HoldKey, "maybe")),
		node("c", at(oldCfg)),
	)
	s, err := rollout.Plan(pool(maxUnavailable(intstr.FromInt32(3))), ns, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Targets, []string{"c"}) || !slices.Equal(s.Held, []string{"a", "b"}) {
		t.Fatalf("targets %v held %v, want [c] and [a b]", s.Targets, s.Held)
	}
	for _, sk := range s.Skipped {
		if sk.Reason != rollout.SkipHeld {
			t.Errorf("skip %+v, want Held", sk)
		}
		if sk.Node == "b" && !strings.Contains(sk.Message, `"maybe" is not true or false`) {
			t.Errorf("a typo'd hold: %q", sk.Message)
		}
	}
	// A hold does not stop a node mid-update.
	ns = nodes(node("a", updating(oldCfg, newCfg), annotated(policy.HoldKey, "true")))
	if s, _ := rollout.Plan(pool(), ns, rollout.Options{}); len(s.Held) != 0 || s.Skipped[0].Reason != rollout.SkipAtTarget {
		t.Errorf("a held node mid-update: %+v", s)
	}
}

func TestPlanUpdateOrderAndPriority(t *testing.T) {
	ns := nodes(
		node("old-a", at(oldCfg), age(0), zone("z2")),
		node("mid", at(oldCfg), age(10), zone("z1")),
		node("new", at(oldCfg), age(20), zone("z1")),
		node("old-b", at(oldCfg), age(0), zone("z1")),
	)
	p := pool(maxUnavailable(intstr.FromInt32(4)))
	order := func(anns map[string]string, ns []*corev1.Node) []string {
		t.Helper()
		s, err := rollout.Plan(p, ns, rollout.Options{Policy: mustPolicy(t, anns)})
		if err != nil {
			t.Fatal(err)
		}
		return s.Targets
	}
	if got, want := order(nil, ns), []string{"old-b", "mid", "new", "old-a"}; !slices.Equal(got, want) {
		t.Errorf("default order (zone, age, name) %v, want %v", got, want)
	}
	if got, want := order(map[string]string{policy.OrderKey: "OldestFirst"}, ns), []string{"old-a", "old-b", "mid", "new"}; !slices.Equal(got, want) {
		t.Errorf("OldestFirst %v, want %v", got, want)
	}
	if got, want := order(map[string]string{policy.OrderKey: "NewestFirst"}, ns), []string{"new", "mid", "old-a", "old-b"}; !slices.Equal(got, want) {
		t.Errorf("NewestFirst %v, want %v", got, want)
	}
	prio := append(ns[:3:3], node("old-b", at(oldCfg), age(0), zone("z1"), annotated(policy.PriorityKey, "-1")))
	prio[2] = node("new", at(oldCfg), age(20), zone("z1"), annotated(policy.PriorityKey, "5"))
	if got, want := order(map[string]string{policy.OrderKey: "OldestFirst"}, prio), []string{"new", "old-a", "mid", "old-b"}; !slices.Equal(got, want) {
		t.Errorf("priorities then OldestFirst %v, want %v", got, want)
	}
	bad := nodes(node("x", at(oldCfg), annotated(policy.PriorityKey, "high")))
	if _, err := rollout.Plan(p, bad, rollout.Options{}); err == nil || !strings.Contains(err.Error(), "node x annotation "+policy.PriorityKey) {
		t.Errorf("bad priority: %v", err)
	}
}
