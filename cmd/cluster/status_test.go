package cluster

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// runMcotui runs mcotui in-process against the test control plane.
func runMcotui(t *testing.T, env *kubetest.Env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = mcotui.Run(append(args, "--kubeconfig", env.KubeconfigPath), cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

var updateStatus = flag.Bool("update-status", false, "rewrite testdata/status/*.golden from the current output")

// statusFixture is a cluster mid-rollout: the worker pool updating (one node done, one
// in the middle of its update, one waiting), the master pool updated, and an infra node
// that has no MachineConfigNode yet.
func statusFixture(now time.Time) kube.ClusterStatus {
	created := metav1.NewTime(now.Add(-(4*time.Hour + 42*time.Minute)))
	cond := func(t mcfgv1.MachineConfigPoolConditionType, s corev1.ConditionStatus) mcfgv1.MachineConfigPoolCondition {
		return mcfgv1.MachineConfigPoolCondition{Type: t, Status: s}
	}
	pool := func(name, config string, counts [4]int32, updated, updating, degraded corev1.ConditionStatus) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Status: mcfgv1.MachineConfigPoolStatus{
				Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: config}},
				MachineCount:  counts[0], ReadyMachineCount: counts[1], UpdatedMachineCount: counts[2], DegradedMachineCount: counts[3],
				Conditions: []mcfgv1.MachineConfigPoolCondition{
					cond(mcfgv1.MachineConfigPoolUpdated, updated), cond(mcfgv1.MachineConfigPoolUpdating, updating), cond(mcfgv1.MachineConfigPoolDegraded, degraded),
				},
			},
		}
	}
	const (
		masterCfg = "rendered-master-06c9c4a1d3f5e7b9c2a4f6e8d0b1c3a5"
		oldCfg    = "rendered-worker-f4b64a2c8e1d3f5a7b9c0e2d4f6a8b1c"
		newCfg    = "rendered-worker-c1b41a3e5d7f9b2c4e6a8d0f1b3c5e7a"
	)
	at := metav1.NewTime(now.Add(-time.Minute))
	mcn := func(name, pool, desired, current string, age time.Duration, conds ...phase.Condition) *mcfgv1.MachineConfigNode {
		m := &mcfgv1.MachineConfigNode{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec: mcfgv1.MachineConfigNodeSpec{
				Node: mcfgv1.MCOObjectReference{Name: name}, Pool: mcfgv1.MCOObjectReference{Name: pool},
				ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: desired},
			},
			Status: mcfgv1.MachineConfigNodeStatus{ConfigVersion: &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: current, Desired: desired}},
		}
		m.Status.Conditions, _ = phase.Apply(nil, desired, at, conds...)
		return m
	}
	// pins writes what the agent's pinned-image work reports.
	pins := func(m *mcfgv1.MachineConfigNode, sets []mcfgv1.MachineConfigNodeStatusPinnedImageSet, conds ...pinned.Condition) *mcfgv1.MachineConfigNode {
		m.Status.PinnedImageSets = sets
		for _, c := range conds {
			for i := range m.Status.Conditions {
				if m.Status.Conditions[i].Type == string(c.Type) {
					m.Status.Conditions[i] = metav1.Condition{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: at}
				}
			}
		}
		return m
	}
	// irreconcilable writes what an agent reports of a layout change it does not make.
	irreconcilable := func(m *mcfgv1.MachineConfigNode, diffs ...mcfgv1.IrreconcilableChangeDiff) *mcfgv1.MachineConfigNode {
		m.Status.IrreconcilableChanges = diffs
		return m
	}
	return kube.ClusterStatus{
		Pools: []*mcfgv1.MachineConfigPool{
			pool("master", masterCfg, [4]int32{3, 3, 3, 0}, "True", "False", "False"),
			pool("worker", oldCfg, [4]int32{3, 2, 1, 0}, "False", "True", "False"),
		},
		MCNs: []*mcfgv1.MachineConfigNode{
			mcn("ci-master-0", "master", masterCfg, masterCfg, 27*time.Minute, phase.UpToDate("ci-master-0")),
			pins(mcn("ci-worker-a", "worker", newCfg, newCfg, 20*time.Minute, phase.UpToDate("ci-worker-a")),
				[]mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "release", DesiredGeneration: 1}},
				pinned.Prefetching("ci-worker-a", pinned.Progress{Done: 2, Total: 3, Bytes: 21_000_000})),
			mcn("ci-worker-b", "worker", newCfg, oldCfg, 20*time.Minute,
				phase.Prepared("[Reboot]", true), phase.Executing(), phase.CordonDone(), phase.Draining("drain-"+newCfg, "uncordon-"+oldCfg)),
			irreconcilable(pins(mcn("ci-worker-c", "worker", oldCfg, oldCfg, 19*time.Minute, phase.UpToDate("ci-worker-c")),
				[]mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "release", DesiredGeneration: 1, CurrentGeneration: 1}},
				pinned.Complete(pinned.Progress{Done: 3, Total: 3, Bytes: 31_500_000}, ""), pinned.Healthy()),
				mcfgv1.IrreconcilableChangeDiff{FieldPath: "spec.config.storage.disks[0]", Diff: "+ {\"device\":\"/dev/sdb\",\"wipeTable\":true}\n"}),
		},
		Unlisted: []kube.UnlistedNode{{Pool: "worker", Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: "ci-worker-d", CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second)),
		}}}},
	}
}

// TestStatusGolden prints a fixed cluster in the table formats; the golden files show
// the columns of `oc get mcp` and `oc get machineconfignodes [-o wide]`.
func TestStatusGolden(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, format := range []string{"", "wide"} {
		name := "status.golden"
		if format != "" {
			name = "status-" + format + ".golden"
		}
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeStatus(&out, statusFixture(now), format, now); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "status", name)
			if *updateStatus {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestStatusGolden . -update-status to create it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from %s (rerun with -update-status if intended):\n%s", golden, out.String())
			}
		})
	}
}

// TestStatusMatchesKubectl: against a real API server, status prints what kubectl
// prints for the same pool and MachineConfigNodes, column for column (but AGE, which
// ticks between the two calls).
func TestStatusMatchesKubectl(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	now := time.Now()
	fx := statusFixture(now)
	for _, p := range fx.Pools {
		p := p.DeepCopy()
		p.Name = "st-" + p.Name
		p.CreationTimestamp = metav1.Time{}
		status := p.Status
		created, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = status
		for i := range created.Status.Conditions {
			created.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
		}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range fx.MCNs {
		m := m.DeepCopy()
		m.Name = "st-" + m.Name
		m.Spec.Node.Name = m.Name
		m.Spec.Pool.Name = "st-" + m.Spec.Pool.Name
		m.CreationTimestamp = metav1.Time{}
		status := m.Status
		created, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = status
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, pool := range []string{"st-worker", "st-master"} {
		for _, wide := range []bool{false, true} {
			args := []string{"status", pool}
			if wide {
				args = append(args, "-o", "wide")
			}
			code, out, errOut := runMcotui(t, env, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			// kubectl prints the two tables; what status adds after them (the nodes'
			// irreconcilable changes) is checked by TestStatusGolden.
			if i := strings.Index(out, "\n\nIrreconcilable changes"); i >= 0 {
				out = out[:i+1]
			}
			tables := strings.Split(strings.TrimRight(out, "\n"), "\n\n")
			if len(tables) != 2 {
				t.Fatalf("%v: want two tables:\n%s", args, out)
			}
			kubectlArgs := []string{"get", "machineconfigpools", pool}
			if wide {
				kubectlArgs = append(kubectlArgs, "-o", "wide")
			}
			compareTables(t, tables[0], kubectl(t, env, kubectlArgs...))
			var mcns []string
			for _, m := range fx.MCNs {
				if "st-"+m.Spec.Pool.Name == pool {
					mcns = append(mcns, "st-"+m.Name)
				}
			}
			kubectlArgs = append([]string{"get", "machineconfignodes"}, mcns...)
			if wide {
				kubectlArgs = append(kubectlArgs, "-o", "wide")
			}
			compareTables(t, tables[1], kubectl(t, env, kubectlArgs...))
		}
	}

	code, out, _ := runMcotui(t, env, "status", "st-worker", "-o", "json")
	var list struct {
		Kind  string
		Items []struct {
			Kind     string
			Metadata struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("status -o json: exit %d, %v:\n%s", code, err, out)
	}
	var kinds []string
	for _, it := range list.Items {
		kinds = append(kinds, it.Kind+"/"+it.Metadata.Name)
	}
	if list.Kind != "List" || strings.Join(kinds, " ") != "MachineConfigPool/st-worker MachineConfigNode/st-ci-worker-a MachineConfigNode/st-ci-worker-b MachineConfigNode/st-ci-worker-c" {
		t.Errorf("status -o json: %s %v", list.Kind, kinds)
	}

	code, _, errOut := runMcotui(t, env, "status", "st-nope")
	if code != 1 || !strings.Contains(errOut, `machineconfigpool "st-nope" not found`) {
		t.Errorf("status of a missing pool: exit %d: %s", code, errOut)
	}
}

func kubectl(t *testing.T, env *kubetest.Env, args ...string) string {
	t.Helper()
	out, err := env.KubectlCommand(kubetest.Context(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// compareTables compares two tables cell by cell, by column name, but AGE.
func compareTables(t *testing.T, got, want string) {
	t.Helper()
	rows := func(s string) (map[string]int, [][]string) {
		lines := strings.Split(s, "\n")
		header := strings.Fields(lines[0])
		idx := map[string]int{}
		for i, h := range header {
			idx[h] = i
		}
		var out [][]string
		for _, l := range lines {
			out = append(out, strings.Fields(l))
		}
		return idx, out
	}
	gi, gr := rows(got)
	wi, wr := rows(want)
	// mcotui's -o wide ends in the pinned-image, OS image staging and image mode columns oc does not
	// print; the columns kubectl has come first and must match.
	head := gr[0]
	if extra := []string{"PINNEDIMAGESETSPROGRESSING", "PINNEDIMAGESETSDEGRADED", "PINNEDIMAGES", "OSIMAGESTAGE", "DESIREDIMAGE", "CURRENTIMAGE"}; len(head) == len(wr[0])+len(extra) &&
		strings.Join(head[len(wr[0]):], " ") == strings.Join(extra, " ") {
		head = head[:len(wr[0])]
	}
	if strings.Join(head, " ") != strings.Join(wr[0], " ") {
		t.Errorf("headers differ:\nmcotui:  %s\nkubectl: %s", strings.Join(gr[0], " "), strings.Join(wr[0], " "))
		return
	}
	if len(gr) != len(wr) {
		t.Errorf("mcotui has %d rows, kubectl %d:\n%s\n---\n%s", len(gr), len(wr), got, want)
		return
	}
	for r := 1; r < len(gr); r++ {
		for col, wc := range wi {
			if col == "AGE" {
				continue
			}
			var g, w string
			if i := gi[col]; i < len(gr[r]) {
				g = gr[r][i]
			}
			if wc < len(wr[r]) {
				w = wr[r][wc]
			}
			if g != w {
				t.Errorf("row %d column %s: mcotui %q, kubectl %q\n%s\n---\n%s", r, col, g, w, got, want)
			}
		}
	}
}

// The pools with a rollout policy or a RolloutHeld condition get a line: what the
// policy does now, and what the controller said of it.
func TestStatusPolicyLines(t *testing.T) {
	now := time.Date(2026, 12, 5, 17, 48, 0, 0, time.UTC)
	plain := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}
	worker := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Annotations: map[string]string{
		policy.WindowsKey: "Sat 22:00-Sun 04:00 Europe/Berlin",
	}}}
	worker.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{
		Type: policy.HeldCondition, Status: corev1.ConditionTrue, Reason: "OutsideWindow",
		Message: "outside the maintenance windows: next window opens Sat 22:00 CET; 1 held by " + policy.HoldKey + ": worker-3",
	}}
	bad := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Annotations: map[string]string{policy.OrderKey: "Random"}}}
	var out bytes.Buffer
	if err := writePolicies(&out, []*mcfgv1.MachineConfigPool{bad, plain, worker}, now); err != nil {
		t.Fatal(err)
	}
	want := `
Rollout policy:
  gpu: invalid: pool gpu annotation mcotui.io/update-order: "Random" is not OldestFirst or NewestFirst.
  worker: windows Sat 22:00-Sun 04:00 Europe/Berlin (next window in 3h12m (Sat 22:00 CET)). RolloutHeld: held, outside the maintenance windows: next window opens Sat 22:00 CET; 1 held by mcotui.io/update-hold: worker-3.
`
	if out.String() != want {
		t.Errorf("policy lines:\n%s\nwant:\n%s", out.String(), want)
	}
}
