package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestRolloutWait sets maxUnavailable, prints the plan and follows the rollout to the
// end: the plan's waves and predicted disruption, who drives it, a progress bar and a
// line per phase change; exit 0.
func TestRolloutWait(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "ro", 3, nil)
	ns := c.StartController(t)
	c.StartAgent(t, 600*time.Millisecond)
	c.WaitUpdated(t)
	c.SetFile(t, "v2")
	cmdtest.WaitFor(t, "pool rendered v2", func() bool { return c.GetPool(t).Spec.Configuration.Name != c.GetPool(t).Status.Configuration.Name })

	code, out, errOut := runMcotui(t, c.Env, "rollout", "ro", "--max-unavailable", "2", "--wait", "--timeout", "60s", "--namespace", ns, "--poll-interval", "200ms")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("mcotui rollout ro --max-unavailable 2 --wait:\n%s", out)
	for _, want := range []string{
		"machineconfigpool.machineconfiguration.openshift.io/ro maxUnavailable set to 2",
		"Driven by mcotui controller test-controller (lease " + ns + "/mcotui-controller).",
		"[####################] 3/3 nodes updated to rendered-ro-",
		"machineconfigpool ro is updated: all 3 nodes run rendered-ro-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A node the controller targeted before the command started may be Updated by its
	// first look (a loaded machine's agent is quick next to a slow first read), so its
	// line says only Updated; the last wave starts after the command, and its node is
	// seen moving.
	moved := 0
	for _, n := range c.Nodes {
		if !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  ` + n + `: (.* -> )?Updated$`).MatchString(out) {
			t.Errorf("no line says %s is Updated:\n%s", n, out)
		}
		if regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  ` + n + `: .* -> Updated$`).MatchString(out) {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no line says a node became Updated:\n%s", out)
	}
	if p := c.GetPool(t); p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.String() != "2" {
		t.Errorf("spec.maxUnavailable = %v", p.Spec.MaxUnavailable)
	}
	// The controller held the Lease: the command only watched.
	if w := c.DesiredConfigWriters(t); len(w) != 1 || !w["test-controller"] {
		t.Errorf("desiredConfig written by %v, want the controller alone", w)
	}
}

// TestRolloutWaitDrives: with no controller and no MCO, rollout --wait drives the pool
// itself, holding the controller's Lease: maxUnavailable at a time, to Updated, exit 0;
// the nodes' desiredConfig is written by mcotui-rollout@HOST:PID, and the Lease is released
// at the end.
func TestRolloutWaitDrives(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rw", 4, nil)
	ns, err := c.Env.CreateNamespace(kubetest.Context(t), "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	target := c.RenderByHand(t)
	c.StartAgent(t, 400*time.Millisecond)
	most := c.WatchUnavailable(t)

	code, out, errOut := runMcotui(t, c.Env, "rollout", "rw", "--max-unavailable", "2", "--wait", "--timeout", "60s", "--namespace", ns, "--poll-interval", "200ms")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("mcotui rollout rw --max-unavailable 2 --wait:\n%s", out)
	for _, want := range []string{
		"No mcotui controller holds the lease " + ns + "/mcotui-controller: this command drives the rollout while it waits, as " + rolloutIdentity() + ".",
		"  targeted rw-0, rw-1 with " + target + "\n",
		"[####################] 4/4 nodes updated to " + target,
		"machineconfigpool rw is updated: all 4 nodes run " + target,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "nothing drives this rollout") {
		t.Errorf("stderr warns that nothing drives the rollout: %s", errOut)
	}
	if n, at := most(); n != 2 {
		t.Errorf("at most %d nodes unavailable at once (%s); maxUnavailable is 2, and the rollout should use it", n, at)
	}
	if w := c.DesiredConfigWriters(t); len(w) != 1 || !w[rolloutIdentity()] {
		t.Errorf("desiredConfig written by %v, want %s alone", w, rolloutIdentity())
	}
	if holder, held, err := kube.LeaseHolder(kubetest.Context(t), c.Env.Kube, ns, install.LeaseName, time.Now()); err != nil || held {
		t.Errorf("after the command: lease holder %q held %t err %v; want it released", holder, held, err)
	}
}

// TestRolloutWaitNoNamespace: when the Lease's namespace does not exist, --wait cannot
// drive, says why and how to fix it, and exits 1 rather than wait for nothing.
func TestRolloutWaitNoNamespace(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rn", 1, nil)
	c.RenderByHand(t)
	code, out, errOut := runMcotui(t, c.Env, "rollout", "rn", "--wait", "--timeout", "60s", "--namespace", "nowhere", "--poll-interval", "200ms")
	if code != 1 || !strings.Contains(errOut, "the namespace nowhere of the lease mcotui-controller does not exist: install mcotui") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// planCluster is a pool of n nodes as a controller would have left it, without one
// running: rendered at rendered-NAME-new (from 00-NAME) and paused, with a config
// rendered-NAME-old to put nodes at.
func planCluster(t *testing.T, name string, n int, maxUnavailable *intstr.IntOrString) *cmdtest.RolloutCluster {
	t.Helper()
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), name, n, maxUnavailable)
	ctx := kubetest.Context(t)
	p := c.GetPool(t)
	mc, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, "00-"+name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-" + name + "-old"}, Spec: mcfgv1.MachineConfigSpec{
		Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)},
	}}
	if _, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Delete(context.Background(), old.Name, metav1.DeleteOptions{})
	})
	newMC := mc.DeepCopy()
	newMC.ObjectMeta = metav1.ObjectMeta{Name: "rendered-" + name + "-new"}
	if _, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, newMC, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Delete(context.Background(), newMC.Name, metav1.DeleteOptions{})
	})
	p.Spec.Configuration.Name = newMC.Name
	p.Spec.Paused = true
	if _, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRolloutPlan prints the plan of a pool that waits for its rollout (paused), with
// the predicted disruption of each node, and warns that nothing drives it.
func TestRolloutPlan(t *testing.T) {
	c := planCluster(t, "plan", 3, func() *intstr.IntOrString { v := intstr.FromString("50%"); return &v }())
	// Two nodes at an older config, one never configured.
	for _, n := range c.Nodes[:2] {
		annotateNode(t, c.Env, n, map[string]any{nodeanno.CurrentConfigKey: "rendered-plan-old", nodeanno.DesiredConfigKey: "rendered-plan-old", nodeanno.StateKey: nodeanno.StateDone})
	}
	// plan-2 stays unenrolled: no config yet.

	code, out, errOut := runMcotui(t, c.Env, "rollout", "plan", "--namespace", "nowhere")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	wantOut := `Pool plan: rendered-plan-new on 0 of 3 nodes; 3 to update in 3 waves, maxUnavailable 1. The pool is paused: nothing happens until it is resumed (mcotui resume plan).

WAVE   NODE     ZONE     FROM                ACTIONS   DRAIN
1      plan-0   <none>   rendered-plan-old   Reboot    yes
2      plan-1   <none>   rendered-plan-old   Reboot    yes
3      plan-2   <none>   <none>              Reboot    yes

Drain forecast: 3 node(s) drain; none blocks or loses data; with plan-0 cordoned, their pods request 0 CPU, 0 memory; the pool's other nodes have 2000 CPU, 2Ti memory free: fits.

`
	if out != wantOut {
		t.Errorf("plan:\n%s\nwant:\n%s", out, wantOut)
	}
	if !strings.Contains(errOut, "Warning: no mcotui controller holds the lease nowhere/mcotui-controller") {
		t.Errorf("stderr lacks the warning: %s", errOut)
	}
}

// TestRolloutPlanMidRollout: mid-rollout, the node updating holds the pool's one unit
// of maxUnavailable, so nothing can be targeted now; the plan still shows the waves
// that follow it, says wave 1 starts once it finishes, and forecasts their drains.
func TestRolloutPlanMidRollout(t *testing.T) {
	c := planCluster(t, "mid", 3, nil)
	annotateNode(t, c.Env, c.Nodes[0], map[string]any{nodeanno.CurrentConfigKey: "rendered-mid-old", nodeanno.DesiredConfigKey: "rendered-mid-new", nodeanno.StateKey: nodeanno.StateWorking})
	for _, n := range c.Nodes[1:] {
		annotateNode(t, c.Env, n, map[string]any{nodeanno.CurrentConfigKey: "rendered-mid-old", nodeanno.DesiredConfigKey: "rendered-mid-old", nodeanno.StateKey: nodeanno.StateDone})
	}
	code, out, errOut := runMcotui(t, c.Env, "rollout", "mid", "--namespace", "nowhere")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	wantOut := `Pool mid: rendered-mid-new on 0 of 3 nodes, 1 updating; 2 to update in 2 waves, maxUnavailable 1. The pool is paused: nothing happens until it is resumed (mcotui resume mid).
In flight now: mid-0 (they hold all of maxUnavailable: wave 1 starts once they finish).

WAVE   NODE    ZONE     FROM               ACTIONS   DRAIN
1      mid-1   <none>   rendered-mid-old   Reboot    yes
2      mid-2   <none>   rendered-mid-old   Reboot    yes

Drain forecast: 2 node(s) drain; none blocks or loses data; with mid-1 cordoned, their pods request 0 CPU, 0 memory; the pool's other nodes have 2000 CPU, 2Ti memory free: fits.

`
	if out != wantOut {
		t.Errorf("plan:\n%s\nwant:\n%s", out, wantOut)
	}
}

func annotateNode(t *testing.T, env *kubetest.Env, node string, anns map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Nodes().Patch(kubetest.Context(t), node, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutDegraded: --wait exits 1 as soon as a node fails, naming it.
func TestRolloutDegraded(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rd", 2, nil)
	ns := c.StartController(t)
	c.StartAgent(t, 300*time.Millisecond, "rd-0")
	cmdtest.WaitFor(t, "pool rendered", func() bool { return c.GetPool(t).Spec.Configuration.Name != "" })
	code, out, errOut := runMcotui(t, c.Env, "rollout", "rd", "--wait", "--timeout", "60s", "--namespace", ns, "--poll-interval", "200ms")
	if code != exitRolloutDegraded {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRolloutDegraded, out, errOut)
	}
	if !strings.Contains(out, "node rd-0 failed to update to rendered-rd-") || !strings.Contains(out, "(state Degraded): boom") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRolloutTimeout: --wait exits 2 when the pool is not updated in time (here it is
// paused).
func TestRolloutTimeout(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rt", 1, nil)
	ns := c.StartController(t)
	c.StartAgent(t, 100*time.Millisecond)
	c.WaitUpdated(t)
	if code, out, errOut := runMcotui(t, c.Env, "pause", "rt"); code != 0 || out != "machineconfigpool.machineconfiguration.openshift.io/rt paused\n" {
		t.Fatalf("pause: exit %d: %s%s", code, out, errOut)
	}
	c.SetFile(t, "v2")
	cmdtest.WaitFor(t, "pool rendered v2", func() bool { p := c.GetPool(t); return p.Spec.Configuration.Name != p.Status.Configuration.Name })
	code, out, errOut := runMcotui(t, c.Env, "rollout", "rt", "--wait", "--timeout", "2s", "--namespace", ns, "--poll-interval", "200ms")
	if code != exitRolloutTimeout || !strings.Contains(out, "timed out after 2s: 0 of 1 nodes updated") {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRolloutTimeout, out, errOut)
	}
	if !strings.Contains(out, "The pool is paused") {
		t.Errorf("the plan does not say the pool is paused:\n%s", out)
	}

	if code, out, _ := runMcotui(t, c.Env, "pause", "rt"); code != 0 || !strings.Contains(out, "rt already paused") {
		t.Errorf("pause again: exit %d: %s", code, out)
	}
	if code, out, _ := runMcotui(t, c.Env, "resume", "rt"); code != 0 || out != "machineconfigpool.machineconfiguration.openshift.io/rt resumed\n" {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	code, out, errOut = runMcotui(t, c.Env, "rollout", "rt", "--wait", "--timeout", "60s", "--namespace", ns, "--poll-interval", "200ms")
	if code != 0 {
		t.Fatalf("after resume: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestRolloutUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout"}, "accepts 1 arg(s), received 0"},
		{[]string{"rollout", "p", "--max-unavailable", "two"}, `--max-unavailable "two": give a number of nodes such as 2 or a percentage such as 25%`},
		{[]string{"rollout", "p", "--max-unavailable", "-1"}, `--max-unavailable "-1"`},
		{[]string{"rollout", "p", "--timeout", "0s"}, "--timeout 0s: give a positive duration"},
		{[]string{"pause"}, "accepts 1 arg(s), received 0"},
	} {
		code, _, errOut := mcotui.Cmd(t, tc.args...)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
		}
	}
}

// TestRolloutWaitFollowsWithoutLeaseAccess: someone allowed to read pools and nodes but
// not Leases (a CI job's service account, say) follows a controller-driven rollout to
// its end, exit 0, warned that it will not drive; it neither fails nor writes a target.
func TestRolloutWaitFollowsWithoutLeaseAccess(t *testing.T) {
	c := cmdtest.NewRolloutCluster(t, cluster.Env(t), "rf", 2, nil)
	ns := c.StartController(t)
	c.StartAgent(t, 300*time.Millisecond)
	c.WaitUpdated(t)

	ctx := kubetest.Context(t)
	const user = "rollout-follower"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{mcfgv1.GroupName}, Resources: []string{"machineconfigpools", "machineconfigs", "machineconfignodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if _, err := c.Env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := c.Env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.Env.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = user
	}
	kubeconfig := filepath.Join(t.TempDir(), "follower.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	c.SetFile(t, "v2")
	cmdtest.WaitFor(t, "pool rendered v2", func() bool { return c.GetPool(t).Spec.Configuration.Name != c.GetPool(t).Status.Configuration.Name })
	var out, errOut bytes.Buffer
	code := mcotui.Run([]string{"rollout", "rf", "--wait", "--timeout", "60s", "--namespace", ns, "--poll-interval", "200ms", "--kubeconfig", kubeconfig},
		cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "cannot read the lease "+ns+"/mcotui-controller") || !strings.Contains(errOut.String(), "without driving it") {
		t.Errorf("stderr does not say the command follows without driving:\n%s", errOut.String())
	}
	if strings.Contains(out.String(), "this command drives") {
		t.Errorf("the command claims to drive:\n%s", out.String())
	}
	if w := c.DesiredConfigWriters(t); len(w) != 1 || !w["test-controller"] {
		t.Errorf("desiredConfig written by %v, want the controller alone", w)
	}
}
