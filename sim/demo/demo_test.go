package demo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/sim/demo"
)

// The demo against the real kube-apiserver of kubetest: the story is played by the real
// controller and agents, so what it shows is what they do.

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// storyStall is how long the demo's story, at the tests' speed, may go without a step
// or a node's state moving before its test fails: its longest quiet stretch is a
// sleep of 15s of story time, 1.5s at speed 10, and a node's update moves its state
// every few seconds of story time; a minute leaves a loaded machine ample room.
const storyStall = time.Minute

// lastStep is the story's latest step, for a failure's message.
func lastStep(steps []string) string {
	if len(steps) == 0 {
		return "none"
	}
	return steps[len(steps)-1]
}

// awsTarget is the x86_64 us-east-1 AMI of the demo's stream metadata.
const awsTarget = "ami-0e5d1a7b2c8f3e496"

func TestStoryPlaysToTheEnd(t *testing.T) {
	ctx := kubetest.Context(t)
	var (
		mu    sync.Mutex
		steps []string
	)
	d, err := demo.Start(ctx, demo.Options{
		// Three workers with real agents, two played by the stand-in (as past MaxAgents).
		Config: env.Config, Nodes: 8, Agents: 6, Speed: 10, Seed: 1, Dir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Progress: func(s string) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()

	initialPods := podNames(t, ctx)
	if len(initialPods) == 0 {
		t.Fatal("no workload pods at the start")
	}

	// The story takes as long as the loaded machine lets it: the wait fails only when
	// neither the story's steps nor any node's state moved for storyStall. Each poll
	// also records what a user watching the nodes would see degrade, whenever it happens.
	degraded := map[string]bool{}
	kubetest.EventuallyProgress(t, storyStall, "the story to end", func() kubetest.Progress {
		select {
		case <-d.StoryDone():
			return kubetest.Progress{Done: true}
		default:
		}
		nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		mu.Lock()
		defer mu.Unlock()
		mark := fmt.Sprint(len(steps), " steps")
		if err != nil {
			return kubetest.Progress{Mark: mark, State: err.Error()}
		}
		var states []string
		for _, n := range nodes.Items {
			if nodeanno.State(&n) == nodeanno.StateDegraded {
				degraded[n.Name] = true
			}
			states = append(states, n.Name+"="+nodeanno.State(&n)+"@"+nodeanno.Current(&n))
		}
		slices.Sort(states)
		mark += "; " + strings.Join(states, " ")
		return kubetest.Progress{Mark: mark, State: mark + "; last step: " + lastStep(steps)}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(steps) == 0 || steps[len(steps)-1] != demo.StepEnd {
		t.Fatalf("the story did not end; its steps:\n%s", strings.Join(steps, "\n"))
	}

	// Every node is Done on its pool's new config, which holds the story's configs.
	for pool, want := range map[string][]string{
		"master": {"00-master", "99-master-node-exporter"},
		"worker": {"00-worker", "99-worker-chrony", "99-worker-node-exporter"},
	} {
		p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sources []string
		for _, s := range p.Status.Configuration.Source {
			sources = append(sources, s.Name)
		}
		if !slices.Equal(sources, want) || p.Status.UpdatedMachineCount != p.Status.MachineCount {
			t.Errorf("pool %s: sources %v (want %v), %d of %d machines updated", pool, sources, want, p.Status.UpdatedMachineCount, p.Status.MachineCount)
		}
		nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/" + pool})
		if err != nil {
			t.Fatal(err)
		}
		standIns := 0
		for _, n := range nodes.Items {
			if n.Labels[demo.StandInLabel] == "true" {
				standIns++
			}
			if nodeanno.Current(&n) != p.Spec.Configuration.Name || nodeanno.State(&n) != nodeanno.StateDone || n.Spec.Unschedulable {
				t.Errorf("node %s: current %s, state %s, unschedulable %t; want Done on %s", n.Name,
					nodeanno.Current(&n), nodeanno.State(&n), n.Spec.Unschedulable, p.Spec.Configuration.Name)
			}
			mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := phase.Find(mcn.Status.Conditions, phase.Updated); c.Status != metav1.ConditionTrue {
				t.Errorf("MachineConfigNode %s: Updated = %+v", n.Name, c)
			}
		}
		if want := map[string]int{"master": 0, "worker": 2}[pool]; standIns != want {
			t.Errorf("pool %s has %d stand-in nodes, want %d", pool, standIns, want)
		}
	}

	// One worker degraded, and it recovered (it is Done above).
	if len(degraded) != 1 {
		t.Errorf("nodes seen degraded: %v, want one worker", degraded)
	}
	for name := range degraded {
		if !strings.HasPrefix(name, "worker-") {
			t.Errorf("%s degraded, want a worker", name)
		}
		// The story told each step once, in the order it played them, naming the worker
		// that degraded: what `mcotui demo` shows a newcomer above the TUI's footer.
		want := []string{demo.StepStart, demo.StepChrony, fmt.Sprintf(demo.StepDegraded, name),
			fmt.Sprintf(demo.StepRepaired, name), demo.StepBootImages, demo.StepExporter, demo.StepEnd}
		if !slices.Equal(steps, want) {
			t.Errorf("the story's steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
		}
	}

	// Every worker was drained: no pod of the start is left, and each app is back to its
	// replicas (three workers: storefront 3, checkout 2, recommender 1), all Ready.
	waitWorkloads(t, ctx, initialPods, map[string]int{"storefront": 3, "checkout": 2, "recommender": 1})

	// Boot images: mode All, every MachineSet on the target AMI.
	mc, err := env.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ms := mc.Spec.ManagedBootImages.MachineManagers; len(ms) != 1 || ms[0].Selection.Mode != operatorv1.All {
		t.Errorf("machine managers %+v, want MachineSets in mode All", ms)
	}
	waitAMIs(t, ctx)
}

// waitAMIs waits until every MachineSet boots the target AMI: the controller patches
// them shortly after the mode changes, and the story does not wait for it. It fails
// once no MachineSet has changed for storyStall.
func waitAMIs(t *testing.T, ctx context.Context) {
	t.Helper()
	kubetest.EventuallyProgress(t, storyStall, "every MachineSet on "+awsTarget, func() kubetest.Progress {
		sets, err := env.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return kubetest.Progress{State: err.Error()}
		}
		var last []string
		ok := len(sets.Items) == 3
		for _, ms := range sets.Items {
			var v struct {
				AMI struct{ ID string } `json:"ami"`
			}
			if err := json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &v); err != nil {
				return kubetest.Progress{State: fmt.Sprintf("MachineSet %s: %v", ms.Name, err)}
			}
			last = append(last, ms.Name+"="+v.AMI.ID)
			ok = ok && v.AMI.ID == awsTarget
		}
		state := fmt.Sprintf("MachineSets %v", last)
		return kubetest.Progress{Done: ok, Mark: state, State: state}
	})
}

func podNames(t *testing.T, ctx context.Context) map[string]bool {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		names[p.Name] = true
	}
	return names
}

// waitWorkloads waits until the shop's pods are all new, Ready, and as many per app as
// want: the last drain's replacements may still be starting when the story ends. It
// fails once the pods have not changed for storyStall.
func waitWorkloads(t *testing.T, ctx context.Context, initial map[string]bool, want map[string]int) {
	t.Helper()
	kubetest.EventuallyProgress(t, storyStall, "the shop's workloads", func() kubetest.Progress {
		pods, err := env.Kube.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return kubetest.Progress{State: err.Error()}
		}
		got := map[string]int{}
		var old []string
		for _, p := range pods.Items {
			if initial[p.Name] {
				old = append(old, p.Name)
			}
			ready := p.DeletionTimestamp == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			if ready {
				got[p.Labels["app"]]++
			}
		}
		state := fmt.Sprintf("pods of the start still there: %v; Ready pods per app %v, want %v", old, got, want)
		return kubetest.Progress{Done: len(old) == 0 && maps.Equal(got, want), Mark: state, State: state}
	})
}

// TestStepsFitOneLine: each step, with a node name as long as the demo's longest, fits the
// narration line of a 120-column TUI (two cells go to its mark) and is ASCII, so that it
// is as wide as it is long in any terminal.
func TestStepsFitOneLine(t *testing.T) {
	// The worker that fails is one with a real agent, never a stand-in.
	longest := fmt.Sprintf("worker-%d", demo.MaxAgents-3)
	for _, s := range []string{demo.StepStart, demo.StepChrony, fmt.Sprintf(demo.StepDegraded, longest),
		fmt.Sprintf(demo.StepRepaired, longest), demo.StepBootImages, demo.StepExporter, demo.StepEnd} {
		if len(s) > 118 {
			t.Errorf("%d characters, more than 118: %q", len(s), s)
		}
		for _, r := range s {
			if r < ' ' || r > '~' {
				t.Errorf("%q: %q is not printable ASCII", s, r)
				break
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts demo.Options
		want string
	}{
		{demo.Options{Nodes: 12, Speed: 2}, ""},
		{demo.Options{Nodes: 5, Speed: 0.1}, ""},
		{demo.Options{Nodes: 60, Speed: 100}, ""},
		{demo.Options{Nodes: 10000, Speed: 1}, ""},
		{demo.Options{Nodes: 0, Speed: 1}, "--nodes 0: use 5 to 10000"},
		{demo.Options{Nodes: 12, Speed: 0}, "--speed 0: use 0.1"},
		{demo.Options{Nodes: 4, Speed: 1}, "--nodes 4: use 5 to 10000"},
		{demo.Options{Nodes: 10001, Speed: 1}, "--nodes 10001: use 5 to 10000"},
		{demo.Options{Nodes: 12, Speed: 0.01}, "--speed 0.01: use 0.1"},
		{demo.Options{Nodes: 12, Speed: 1000}, "--speed 1000: use 0.1"},
		{demo.Options{Nodes: 12, Speed: -1}, "--speed -1: use 0.1"},
	} {
		err := tc.opts.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}
