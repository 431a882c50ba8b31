package controller_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/prom"
	"github.com/mcotui/mcotui/platform/prom/promtest"
)

// annotatePool sets (or, for nil values, removes) annotations of the pool.
func annotatePool(t *testing.T, pool string, anns map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(kubetest.Context(t), pool, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate pool %s: %v", pool, err)
	}
}

// waitHeld waits for the pool's RolloutHeld condition to have status and reason, and
// its message to contain msg.
func waitHeld(t *testing.T, pool string, status corev1.ConditionStatus, reason, msg string) {
	t.Helper()
	kubetest.Eventually(t, time.Minute, fmt.Sprintf("pool %s RolloutHeld %s %s %q", pool, status, reason, msg), func() (bool, string) {
		c := poolCondition(getPool(t, pool), policy.HeldCondition)
		if c == nil {
			return false, "no RolloutHeld condition"
		}
		return c.Status == status && c.Reason == reason && strings.Contains(c.Message, msg), fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
	})
}

// waitDone waits for the nodes to be Done at target.
func waitDone(t *testing.T, target string, nodes ...string) {
	t.Helper()
	for _, name := range nodes {
		kubetest.Eventually(t, time.Minute, "node "+name+" done at "+target, func() (bool, string) {
			n := getNode(t, name)
			return rollout.DoneAt(n, target), nodeanno.Current(n) + " " + nodeanno.State(n)
		})
	}
}

// Outside its maintenance window a pool's nodes are not targeted and RolloutHeld says
// when the window opens; once the controller's clock reaches it, the nodes update,
// newest first (update-order), the held node is left out and the pool says so.
func TestRolloutWaitsForTheMaintenanceWindow(t *testing.T) {
	friday := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	fc := testingclock.NewFakeClock(friday)
	pool := createPool(t, "pw", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "pw", map[string]any{policy.WindowsKey: "Sat 22:00-Sun 04:00 UTC", policy.OrderKey: "NewestFirst"})
	v1 := machineConfig(t, "00-pw", "pw", "/etc/pw", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pw", "rendered-pw-old", "", "", "")
	annotate(t, nodes[1], map[string]any{policy.HoldKey: "true"})
	startFakeAgent(t, "pw", 200*time.Millisecond)
	rec := recordNodes(t, "pw")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-pw", "pw-ctrl", func(c *controller.Config) { c.Clock = fc })

	waitHeld(t, "pw", corev1.ConditionTrue, "OutsideWindow", "outside the maintenance windows: next window opens Sat 22:00 UTC")
	if p := getPool(t, "pw"); p.Spec.Configuration.Name != target {
		t.Fatalf("pool rendered to %q, want %q", p.Spec.Configuration.Name, target)
	}
	// The condition is written by the sync that decided not to target; nodes changing
	// now (a heartbeat) make it decide again, still outside the window.
	annotate(t, nodes[0], map[string]any{"example.com/touch": "1"})
	waitHeld(t, "pw", corev1.ConditionTrue, "OutsideWindow", "")
	if _, _, order, _ := rec.report(); len(order) != 0 {
		t.Fatalf("outside the window the controller targeted %v", order)
	}

	fc.SetTime(time.Date(2026, 12, 5, 22, 30, 0, 0, time.UTC))
	waitDone(t, target, nodes[2], nodes[0])
	waitHeld(t, "pw", corev1.ConditionFalse, "AsExpected", "the rollout policy lets nodes start; 1 held by "+policy.HoldKey+": "+nodes[1])
	if _, _, order, _ := rec.report(); !slices.Equal(order, []string{nodes[2], nodes[0]}) {
		t.Errorf("targeted %v, want newest first and the held node left out: %v", order, []string{nodes[2], nodes[0]})
	}
	if n := getNode(t, nodes[1]); nodeanno.Desired(n) == target {
		t.Errorf("the held node %s was targeted", nodes[1])
	}
	// Counts alone are written once per status interval, on the controller's clock.
	fc.Step(controller.DefaultStatusInterval)
	kubetest.Eventually(t, time.Minute, "pool pw: 2 of 3 updated", func() (bool, string) {
		p := getPool(t, "pw")
		return p.Status.UpdatedMachineCount == 2 && p.Status.MachineCount == 3, condString(p)
	})
}

// A firing alert matching the gate holds the rollout, saying which; once it resolves the
// controller looks again (on its clock) and the rollout goes on.
func TestRolloutHeldByAFiringAlert(t *testing.T) {
	stand := promtest.Start(t)
	stand.Set(promtest.Alert{Labels: map[string]string{"alertname": "HighLatency", "severity": "critical"}, State: "firing", ActiveAt: time.Now()})
	alerts, err := prom.New(stand.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := testingclock.NewFakeClock(time.Now())
	pool := createPool(t, "pa", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "pa", map[string]any{policy.AlertsGateKey: `severity="critical"`})
	v1 := machineConfig(t, "00-pa", "pa", "/etc/pa", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pa", "rendered-pa-old", "", "")
	startFakeAgent(t, "pa", 200*time.Millisecond)
	rec := recordNodes(t, "pa")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-pa", "pa-ctrl", func(c *controller.Config) { c.Clock, c.Alerts = fc, alerts })

	waitHeld(t, "pa", corev1.ConditionTrue, "GateFailing", `held by a health gate: alert HighLatency firing (gate {severity="critical"})`)
	if _, _, order, _ := rec.report(); len(order) != 0 {
		t.Fatalf("while the alert fired the controller targeted %v", order)
	}
	reads := stand.Reads()
	stand.Set() // resolved
	// The controller looks again within its gate poll (30s on its clock).
	fc.Step(30 * time.Second)
	waitDone(t, target, nodes...)
	waitHeld(t, "pa", corev1.ConditionFalse, "AsExpected", "")
	if stand.Reads() <= reads {
		t.Errorf("the controller did not ask Prometheus again after the alert resolved")
	}
	if _, _, order, _ := rec.report(); !slices.Equal(order, nodes) {
		t.Errorf("targeted %v, want %v", order, nodes)
	}
}

// A policy that does not parse holds the rollout with the error (condition and Warning
// Event), never as no policy; fixing the annotation lets it go on.
func TestInvalidRolloutPolicyHoldsThePool(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "pi", ptr.To(intstr.FromInt32(2)), false)
	annotatePool(t, "pi", map[string]any{policy.WindowsKey: "Sat 22:00-Sun 04:00 Mars/Olympus"})
	v1 := machineConfig(t, "00-pi", "pi", "/etc/pi", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pi", "rendered-pi-old", "", "")
	startFakeAgent(t, "pi", 200*time.Millisecond)
	rec := recordNodes(t, "pi")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-pi", "pi-ctrl")

	want := `pool pi annotation ` + policy.WindowsKey + `: window "Sat 22:00-Sun 04:00 Mars/Olympus": unknown time zone "Mars/Olympus"`
	waitHeld(t, "pi", corev1.ConditionTrue, "InvalidPolicy", want)
	kubetest.Eventually(t, time.Minute, "a Warning event InvalidPolicy on pool pi", func() (bool, string) {
		evs, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pi,reason=InvalidPolicy"})
		if err != nil || len(evs.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		return evs.Items[0].Type == corev1.EventTypeWarning && strings.Contains(evs.Items[0].Message, want), evs.Items[0].Message
	})
	if _, _, order, _ := rec.report(); len(order) != 0 {
		t.Fatalf("with an invalid policy the controller targeted %v", order)
	}
	annotatePool(t, "pi", map[string]any{policy.WindowsKey: nil})
	waitDone(t, target, nodes...)
	// The pool's status follows the nodes at the controller's next sync.
	kubetest.Eventually(t, time.Minute, "pool pi Updated, RolloutHeld False", func() (bool, string) {
		p := getPool(t, "pi")
		held, updated := poolCondition(p, policy.HeldCondition), poolCondition(p, mcfgv1.MachineConfigPoolUpdated)
		return held != nil && held.Status == corev1.ConditionFalse && updated != nil && updated.Status == corev1.ConditionTrue, condString(p)
	})
}

// With a pod gate and a soak, the next node waits until the node just updated and the
// gated pod on it have been Ready for the soak; the hold names them. The controller's
// clock moving past the soak lets the rollout go on.
func TestRolloutSoaksBetweenNodes(t *testing.T) {
	ctx := kubetest.Context(t)
	fc := testingclock.NewFakeClock(time.Now())
	pool := createPool(t, "ps", ptr.To(intstr.FromInt32(1)), false)
	annotatePool(t, "ps", map[string]any{policy.PodsGateKey: "app=web", policy.SoakKey: "10m"})
	v1 := machineConfig(t, "00-ps", "ps", "/etc/ps", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "ps", "rendered-ps-old", "", "")
	ns, err := env.CreateNamespace(ctx, "soak-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.RunPod(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: nodes[0]},
	}); err != nil {
		t.Fatal(err)
	}
	startFakeAgent(t, "ps", 200*time.Millisecond)
	rec := recordNodes(t, "ps")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-ps", "ps-ctrl", func(c *controller.Config) { c.Clock = fc })

	waitDone(t, target, nodes[0])
	waitHeld(t, "ps", corev1.ConditionTrue, "GateFailing", "held by a health gate: soaking: node "+nodes[0]+" soaks until ")
	waitHeld(t, "ps", corev1.ConditionTrue, "GateFailing", "pod "+ns+"/web-0 on node "+nodes[0]+" soaks until ")
	if _, _, order, _ := rec.report(); !slices.Equal(order, nodes[:1]) {
		t.Fatalf("while %s soaked the controller targeted %v", nodes[0], order)
	}
	fc.Step(11 * time.Minute)
	waitDone(t, target, nodes[1])
	waitHeld(t, "ps", corev1.ConditionFalse, "AsExpected", "")
}

// An invalid spec.maxUnavailable makes the pool Degraded with the reason (and Updating
// False), and gives out no target and no UpdateInProgress taint; it had been only an
// Event, the pool saying "All nodes are updating" and its nodes tainted. A valid value
// lets the rollout go on.
func TestInvalidMaxUnavailableDegradesThePool(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "pmu", ptr.To(intstr.FromString("ten")), false)
	v1 := machineConfig(t, "00-pmu", "pmu", "/etc/pmu", "v1")
	target := expectedRendered(t, pool, v1)
	nodes := createNodes(t, "pmu", "rendered-pmu-old", "", "")
	startFakeAgent(t, "pmu", 100*time.Millisecond)
	rec := recordNodes(t, "pmu")
	rec.expect(target)
	applyMC(t, v1)
	startController(t, "lease-pmu", "pmu-ctrl")

	kubetest.Eventually(t, time.Minute, "pool pmu Degraded InvalidMaxUnavailable", func() (bool, string) {
		p := getPool(t, "pmu")
		deg, upd := poolCondition(p, mcfgv1.MachineConfigPoolDegraded), poolCondition(p, mcfgv1.MachineConfigPoolUpdating)
		return p.Spec.Configuration.Name == target && deg != nil && deg.Status == corev1.ConditionTrue && deg.Reason == rollout.ReasonInvalidMaxUnavailable &&
			strings.Contains(deg.Message, "machineconfigpool pmu: spec.maxUnavailable ten") &&
			upd != nil && upd.Status == corev1.ConditionFalse, condString(p)
	})
	// The status is written after the taints in the same sync, so none was given out by
	// then; and none after, since every sync of the pool skips them.
	for _, name := range nodes {
		if n := getNode(t, name); rollout.HasUpdateInProgressTaint(n) || nodeanno.Desired(n) == target {
			t.Errorf("node %s of a pool with an invalid maxUnavailable: desired %s, taints %v", name, nodeanno.Desired(n), n.Spec.Taints)
		}
	}
	if _, _, order, _ := rec.report(); len(order) != 0 {
		t.Fatalf("with an invalid maxUnavailable the controller targeted %v", order)
	}
	patch := []byte(`{"spec":{"maxUnavailable":1}}`)
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, "pmu", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, target, nodes...)
	kubetest.Eventually(t, time.Minute, "pool pmu not Degraded", func() (bool, string) {
		p := getPool(t, "pmu")
		deg := poolCondition(p, mcfgv1.MachineConfigPoolDegraded)
		return deg != nil && deg.Status == corev1.ConditionFalse, condString(p)
	})
}
